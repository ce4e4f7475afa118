"""The dask executor on a one-worker cluster (in this process, so it is quick): a step that
raises once is retried by its RetryPolicy on the worker; a step whose upstream failed for good is
not run. (Runs in flight side by side on one cluster: tests/pipelines/test_scaleout.py.)"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from dagster import (
    DagsterInstance,
    Failure,
    RetryPolicy,
    execute_job,
    instance_for_test,
    job,
    op,
    reconstructable,
)

from h3.pipelines.dask_executor import h3_dask_executor

MARKER_ENV = "H3_TEST_FLAKY_MARKER"


@op(retry_policy=RetryPolicy(max_retries=2))
def flaky() -> int:
    """Fails on its first attempt (no marker file yet), succeeds on the retry."""
    marker = Path(os.environ[MARKER_ENV])
    if not marker.exists():
        marker.write_text("failed once")
        raise RuntimeError("transient: store briefly unreachable")
    return 21


@op
def double(value: int) -> int:
    return 2 * value


@op
def broken() -> int:
    raise Failure("broken for good", allow_retries=False)


@job(executor_def=h3_dask_executor)
def flaky_job() -> None:
    double(flaky())


@job(executor_def=h3_dask_executor)
def broken_job() -> None:
    double(broken())


@pytest.fixture(scope="module")
def scheduler():
    import dask.distributed

    with dask.distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                                       dashboard_address=None) as cluster:
        yield cluster.scheduler_address


def _config(address: str) -> dict:
    return {"execution": {"config": {"cluster": {"existing": {"address": address}}}}}


def _steps(instance: DagsterInstance, run_id: str, event: str) -> list[str]:
    return [r.step_key for r in instance.all_logs(run_id)
            if r.dagster_event and r.dagster_event.event_type_value == event]


def test_a_raising_step_is_retried_on_its_worker(scheduler, tmp_path, monkeypatch):
    monkeypatch.setenv(MARKER_ENV, str(tmp_path / "marker"))
    with instance_for_test(temp_dir=str(tmp_path)) as instance, execute_job(
            reconstructable(flaky_job), instance, run_config=_config(scheduler)) as result:
        assert result.success
        assert _steps(instance, result.run_id, "STEP_UP_FOR_RETRY") == ["flaky"]
        assert _steps(instance, result.run_id, "STEP_SUCCESS") == ["flaky", "double"]
        assert result.output_for_node("double") == 42


def test_a_step_after_a_failed_one_is_not_run(scheduler, tmp_path):
    with instance_for_test(temp_dir=str(tmp_path)) as instance, execute_job(
            reconstructable(broken_job), instance, run_config=_config(scheduler),
            raise_on_error=False) as result:
        assert not result.success
        assert _steps(instance, result.run_id, "STEP_FAILURE") == ["broken"]
        assert "double" not in _steps(instance, result.run_id, "STEP_START")
