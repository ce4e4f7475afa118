"""`h3 index-build --executor` and the cores each process's models may use."""

from __future__ import annotations

import pytest

from h3.pipelines.executors import EXECUTOR_ENV, ScaleOutError, executor_default
from h3.resources.models.cpu import CPU_THREADS_ENV, cpu_threads


def test_executor_default_reads_the_environment(monkeypatch):
    monkeypatch.delenv(EXECUTOR_ENV, raising=False)
    assert executor_default() == "in_process"
    monkeypatch.setenv(EXECUTOR_ENV, "dask")
    assert executor_default() == "dask"
    monkeypatch.setenv(EXECUTOR_ENV, "threads")
    with pytest.raises(ScaleOutError, match="H3_EXECUTOR='threads'"):
        executor_default()


def test_cpu_threads_follow_the_share_a_worker_is_given(monkeypatch):
    from h3.resources.models.layout import LayoutModelResource

    monkeypatch.setenv(CPU_THREADS_ENV, "1")
    assert cpu_threads() == 1
    assert LayoutModelResource().page_workers() == 1
    assert LayoutModelResource(workers=3).page_workers() == 3  # an explicit setting wins
    monkeypatch.setenv(CPU_THREADS_ENV, "0")
    with pytest.raises(ValueError, match="H3_CPU_THREADS='0'"):
        cpu_threads()
    monkeypatch.delenv(CPU_THREADS_ENV)
    assert cpu_threads() >= 1


@pytest.mark.slow
def test_local_cluster_workers_share_the_cores():
    import os

    import dask.distributed

    from h3.pipelines.scaleout import dask_cluster

    with dask_cluster(None, 2) as (address, count), dask.distributed.Client(address) as client:
        assert count == 2
        shares = client.run(cpu_threads)
    assert sorted(shares.values()) == [max(1, (os.cpu_count() or 1) // 2)] * 2


def _documents_in_a_worker() -> tuple[bool, list[str], bool]:
    """In a dask worker: (daemonic?, map_documents' results, whether it started workers)."""
    import multiprocessing

    from h3.resources import document_workers

    pending = document_workers.map_documents(str.upper, {"a": ("a",), "b": ("b",)},
                                             {"a": 60.0, "b": 60.0})
    values = [p.result().value for p in pending.values()]
    return multiprocessing.current_process().daemon, values, document_workers._POOL is not None


@pytest.mark.slow
def test_a_lone_dask_worker_computes_its_documents_itself():
    """One local worker may use every core, but dask's workers are daemonic and may not start
    processes: its stages' document work runs in the worker (it crashed the run before)."""
    import dask.distributed

    from h3.pipelines.scaleout import dask_cluster

    with dask_cluster(None, 1) as (address, _), dask.distributed.Client(address) as client:
        (daemonic, values, pooled), = client.run(_documents_in_a_worker).values()
    assert daemonic and values == ["A", "B"] and not pooled


def _sigterm_is_default() -> bool:
    import signal

    return signal.getsignal(signal.SIGTERM) == signal.SIG_DFL


@pytest.mark.slow
def test_workers_restore_sigterm_their_parent_ignored():
    """A worker that kept an inherited SIG_IGN passed it to Dagster's log-capture `tail`
    processes, which then outlived SIGTERM: each step waited 2 x 30 s for them."""
    import signal

    import dask.distributed

    from h3.pipelines.scaleout import dask_cluster

    before = signal.signal(signal.SIGTERM, signal.SIG_IGN)
    try:
        with dask_cluster(None, 1) as (address, _), \
                dask.distributed.Client(address) as client:
            assert list(client.run(_sigterm_is_default).values()) == [True]
    finally:
        signal.signal(signal.SIGTERM, before)
