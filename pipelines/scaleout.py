"""Ingesting on a dask cluster: the job the workers rebuild, the cluster, runs in flight.

Documents spread over workers one batch per run: several runs are in flight at once, each
orchestrated by a small process of its own (it only submits steps and collects their events;
processes, not threads: Dagster's run setup reconfigures `logging`, and two runs doing that in
one process deadlock), and the scheduler hands every step to a free worker. Everything the workers share is under H3_HOME
(a shared folder on many machines) and in the Dagster instance (PostgreSQL on many machines).
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor, as_completed
from contextlib import contextmanager

from dagster import build_reconstructable_job

from h3.pipelines.executors import ScaleOutError
from h3.resources.models.cpu import CPU_THREADS_ENV

WORKER_PRELOAD = "h3.pipelines.dask_worker"


def dask_ingest_job():
    """`ingest_documents` with the dask executor. Workers rebuild the job by this function's
    module and name (dagster's reconstructable job), so the run config they validate is the
    orchestrator's."""
    from h3.pipelines.dask_executor import h3_dask_executor
    from h3.pipelines.definitions import defs

    return defs.resolve_job_def("ingest_documents").with_executor_def(h3_dask_executor)


def reconstructable_dask_job():
    return build_reconstructable_job("h3.pipelines.scaleout", "dask_ingest_job")


@contextmanager
def dask_cluster(address: str | None, workers: int = 2) -> Iterator[tuple[str, int]]:
    """(scheduler address, worker count): the cluster at `address`, or a LocalCluster of
    `workers` processes (one thread each: Dagster steps are not thread-safe) for the block."""
    import dask.distributed

    if address:
        try:
            with dask.distributed.Client(address, timeout=30) as client:
                count = len(client.scheduler_info()["workers"])
        except OSError as exc:
            raise ScaleOutError(f"dask scheduler {address}: cannot connect: {exc}") from None
        if count == 0:
            raise ScaleOutError(f"dask scheduler {address}: no worker has joined it")
        yield address, count
        return
    # each worker's models get its share of the cores (resources/models/cpu.py)
    threads = max(1, (os.cpu_count() or 1) // max(1, workers))
    with dask.distributed.LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                       dashboard_address=None, preload=[WORKER_PRELOAD],
                                       env={CPU_THREADS_ENV: str(threads)}) as cluster:
        yield cluster.scheduler_address, workers


def run_batches_on_dask(address: str, batches: list[list[str]], files_of: dict[str, str],
                        in_flight: int, on_done: Callable[[list[str]], None]) -> list[str]:
    """Runs one `ingest_documents` run per batch on the cluster, `in_flight` at a time; calls
    `on_done(batch)` as each finishes; returns the run ids (a crashed batch's retries too)."""
    spawn = multiprocessing.get_context("spawn")  # no forked copies of LanceDB/torch threads
    run_ids: list[str] = []
    with ProcessPoolExecutor(max_workers=max(1, min(in_flight, len(batches))),
                             mp_context=spawn) as pool:
        futures = {pool.submit(_orchestrate_batch, address, batch,
                               {d: files_of.get(d) for d in batch}): batch for batch in batches}
        for future in as_completed(futures):
            run_ids += future.result()
            on_done(futures[future])
    return run_ids


def _orchestrate_batch(address: str, batch: list[str], files_of: dict[str, str]) -> list[str]:
    """In an orchestrator process: the batch's run (and, if it crashed, one run per document)."""
    from h3.pipelines.ingest_runs import execute_batch
    from h3.pipelines.instance import get_instance

    run_config = {"execution": {"config": {"cluster": {"existing": {"address": address}}}}}
    instance = get_instance()
    try:
        return execute_batch(reconstructable_dask_job(), instance, batch, files_of, run_config)
    finally:
        instance.dispose()
