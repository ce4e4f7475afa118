"""Running a job's steps on a dask `distributed` cluster (the engine behind `--executor dask`).

dagster-dask's own executor is the model (same worker entry point: rebuild the job, run one step
with `execute_plan`); this one differs where H³ needs it to:
- task keys carry the run id: dagster-dask keys a task `<job>.<step>`, so two runs in flight on
  one cluster (how documents spread over workers: one run per batch) would share one task;
- a step whose upstream step failed is not run (dagster-dask runs it on missing inputs);
- steps run with retries enabled, so a step's RetryPolicy (pipelines/jobs.py) retries it on its
  worker; a worker that dies mid-step is the scheduler's to handle: dask reruns the task on a
  surviving worker (`distributed.scheduler.allowed-failures`, default 3) and every stage is
  idempotent per document, so the store ends as after a clean run.

The cluster is only an address (`tcp://host:8786`): `dask scheduler` + `dask worker` processes
on any number of machines, a LocalCluster (pipelines/scaleout.py), or one of dask's deployers
(dask-kubernetes, dask-jobqueue for Slurm/PBS) - nothing H³-specific runs on the cluster side
but `pipelines.dask_worker`, preloaded by each worker.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import nullcontext
from functools import partial

from dagster import DagsterEvent, DagsterEventType, deserialize_value, executor, serialize_value
from dagster import multiple_process_executor_requirements as _requirements
from dagster._core.execution.api import create_execution_plan, execute_plan
from dagster._core.execution.retries import RetryMode
from dagster_dask import dask_executor
from dagster_dask.executor import DaskExecutor

CONNECT_TIMEOUT_S = 30  # connecting to the scheduler; a wrong address fails the run this fast


def run_step_on_worker(recon_job, dagster_run, run_config, step_key: str, instance_ref,
                       known_state, upstream: Sequence[str]) -> str:
    """Runs one step in this worker process (models stay loaded in its caches between steps);
    returns its events, serialised (dask can size and move a string; Dagster's records it
    cannot). `upstream`: the events of the steps it depends on (dask passes the futures'
    results); when one of them did not succeed the step is skipped (the run fails on that one)."""
    from dagster import DagsterInstance

    for events in upstream:
        if not any(e.event_type == DagsterEventType.STEP_SUCCESS
                   for e in deserialize_value(events, list)):
            return serialize_value([])
    with DagsterInstance.from_ref(instance_ref) as instance:
        job = recon_job.get_subset(op_selection=dagster_run.resolved_op_selection)
        plan = create_execution_plan(job, run_config=run_config, step_keys_to_execute=[step_key],
                                     known_state=known_state)
        return serialize_value(list(execute_plan(plan, job, instance, dagster_run,
                                                 run_config=run_config,
                                                 retry_mode=RetryMode.ENABLED)))


class H3DaskExecutor(DaskExecutor):
    """Submits every step of a run to a dask cluster, ordered by dependencies. The cluster is
    dagster-dask's config: `existing: {address}` (the way to use dask-kubernetes, dask-jobqueue
    or `dask scheduler` processes: start the cluster, pass its address) or `local: {...}` (a
    LocalCluster for this run only: its workers load the models again for every run)."""

    @property
    def retries(self) -> RetryMode:
        return RetryMode.ENABLED  # applied on the worker (run_step_on_worker)

    def execute(self, plan_context, execution_plan) -> Iterator[DagsterEvent]:
        import dask.distributed

        run_id = plan_context.dagster_run.run_id
        if self.cluster_type == "existing":
            cluster = self.cluster_configuration["address"]
        elif self.cluster_type == "local":
            cluster = dask.distributed.LocalCluster(**self.build_dict(plan_context.job_name))
        else:
            raise ValueError(f"h3_dask executor: cluster type {self.cluster_type!r}: start that "
                             "cluster with its dask deployer and pass `existing: {address}`")
        try:
            client = dask.distributed.Client(cluster, timeout=CONNECT_TIMEOUT_S)
        except OSError as exc:
            raise RuntimeError(f"dask scheduler {cluster}: cannot connect: {exc}") from exc
        with client, (cluster if not isinstance(cluster, str) else nullcontext()):
            futures: dict = {}
            for level in execution_plan.get_steps_to_execute_by_level():
                for step in level:
                    upstream = [futures[key] for step_input in step.step_inputs
                                for key in step_input.dependency_keys if key in futures]
                    # Dagster's records bound in a partial: dask walks a task's arguments
                    # looking for futures, and Dagster's records refuse to be iterated
                    task = partial(run_step_on_worker, plan_context.reconstructable_job,
                                   plan_context.dagster_run, plan_context.run_config, step.key,
                                   plan_context.instance.get_ref(), execution_plan.known_state)
                    futures[step.key] = client.submit(task, upstream, key=f"{step.key}-{run_id}",
                                                      pure=False)
            for _future, events in dask.distributed.as_completed(list(futures.values()),
                                                                 with_results=True):
                yield from deserialize_value(events, list)


@executor(name="h3_dask", requirements=_requirements(), config_schema=dask_executor.config_schema)
def h3_dask_executor(init_context) -> H3DaskExecutor:
    """Runs each step on a worker of a dask cluster (pipelines/dask_executor.py)."""
    ((cluster_type, cluster_config),) = init_context.executor_config["cluster"].items()
    return H3DaskExecutor(cluster_type, cluster_config)
