"""Scale-out: the sample corpus through a PostgreSQL instance and a 2-worker dask cluster stores
the same rows as the in-process run, even when a worker is killed mid-step; concurrent writers
of one document leave one copy; a store that cannot be opened fails with one line."""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import h3_home_env


@pytest.fixture(scope="module")
def postgres_url() -> Iterator[str]:
    """A private PostgreSQL server (pipelines/postgres.py) for this module's tests."""
    from h3.pipelines.postgres import PostgresError, pg_binary, start, stop

    try:
        pg_binary("initdb")
    except PostgresError as exc:
        pytest.skip(str(exc))  # `make install` installs it (APT_PACKAGES)
    folder = Path(tempfile.mkdtemp(prefix="h3-pg-"))
    folder.chmod(0o755)  # the server runs as the unprivileged `postgres` user when we are root
    try:
        yield start(folder / "server")
    finally:
        stop(folder / "server")
        shutil.rmtree(folder, ignore_errors=True)


def _content(store) -> dict:
    """The store's rows keyed by file name instead of doc id (ids depend on the path), without
    timestamps: what must not differ between two ingestions of the same files."""
    names = {r["doc_id"]: Path(r["source"]).name for r in store.rows("documents")}
    return {
        "counts": store.counts(),
        "documents": sorted((names[r["doc_id"]], r["status"], r["pages"])
                            for r in store.rows("documents")),
        "chunks": sorted((names[r["doc_id"]], r["page"], r["text"])
                         for r in store.rows("chunks", columns=["doc_id", "page", "text"])),
        "regions": sorted((names[r["doc_id"]], r["page"], r["kind"], r["text"] or "")
                          for r in store.rows("regions",
                                              columns=["doc_id", "page", "kind", "text"])),
    }


def _kill_a_worker_mid_step(client, step: str, killed: list[str]) -> None:
    """Waits until some worker runs `step` (any run), then SIGKILLs that worker's process; its
    nanny starts a fresh one and the scheduler hands the step to a worker again."""
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        for worker, keys in client.processing().items():
            if any(str(k).startswith(f"{step}-") for k in keys):
                time.sleep(0.5)  # inside the step, not at its first line
                pid = client.run(os.getpid, workers=[worker])[worker]  # a LocalCluster: here
                os.kill(pid, signal.SIGKILL)
                killed.append(worker)
                return
        time.sleep(0.2)


@pytest.mark.slow
def test_two_workers_on_postgres_store_what_one_process_does(machine_to_itself, ingested_sample,
                                                             postgres_url, tmp_path, monkeypatch):
    import dask.distributed

    from h3.pipelines.cli.index_build import ingest
    from h3.pipelines.dask_worker import loaded_models
    from h3.pipelines.scaleout import WORKER_PRELOAD
    from h3.resources.store import open_store

    with h3_home_env(ingested_sample["home"]):
        expected = _content(open_store())
    corpus = shutil.copytree(ingested_sample["corpus"], tmp_path / "corpus")
    monkeypatch.setenv("H3_POSTGRES_URL", postgres_url)
    with h3_home_env(tmp_path / "h3"), dask.distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
            preload=[WORKER_PRELOAD]) as cluster, dask.distributed.Client(cluster) as client:
        killed: list[str] = []
        killer = threading.Thread(target=_kill_a_worker_mid_step,
                                  args=(client, "embeddings", killed), daemon=True)
        killer.start()
        report = ingest([str(corpus)], executor="dask", dask_scheduler=cluster.scheduler_address,
                        compress=True)
        killer.join(timeout=5)
        assert killed, "no worker was killed: the test did not test recovery"
        assert (report["ok"], report["failed"]) == (3, 0), report
        assert report["compress"]["status"] == "ok", report["compress"]
        assert _content(open_store()) == expected

        from h3.pipelines.instance import get_instance

        instance = get_instance()  # runs and events are in PostgreSQL, every run succeeded
        assert type(instance.run_storage).__name__ == "PostgresRunStorage"
        runs = {r.run_id: r for r in instance.get_runs()}
        assert set(report["run_ids"]) <= set(runs)
        assert {runs[i].status.value for i in report["run_ids"]} == {"SUCCESS"}
        # the worker that was not killed kept the models its steps loaded
        assert any(m for m in client.run(loaded_models).values())

        again = ingest([str(corpus)], executor="dask", dask_scheduler=cluster.scheduler_address)
        assert again["unchanged"] == 3 and _content(open_store()) == expected
        instance.dispose()


def _payloads(n_chunks: int) -> tuple:
    from benchmarks.documents.scaleout import synthetic_document

    return synthetic_document("d1", n_chunks, lambda k: [1.0] + [0.0] * 383)


def test_concurrent_writers_of_one_document_leave_one_copy(tmp_path):
    """Four writers (separate store handles, as separate workers have) rewrite one document at
    once: the document lock keeps each delete+add whole, so no rows are duplicated."""
    from h3.assets.store import write_document
    from h3.resources.store import LanceDocumentStore

    doc, chunked, vectors = _payloads(5)
    errors: list[BaseException] = []

    def writer() -> None:
        store = LanceDocumentStore(tmp_path / "db")
        try:
            for _ in range(3):
                with store.document_lock("d1"):
                    write_document(store, "d1", doc, chunked, vectors)
        except BaseException as exc:  # noqa: BLE001  (reported below)
            errors.append(exc)

    threads = [threading.Thread(target=writer) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    counts = LanceDocumentStore(tmp_path / "db").counts()
    assert (counts["documents"], counts["chunks"], counts["regions"]) == (1, 5, 5)


def test_a_store_that_cannot_be_opened_fails_with_one_line(tmp_path):
    from h3.resources.store.lance import LanceDocumentStore, StoreUnreachableError

    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    with pytest.raises(StoreUnreachableError) as failed:
        LanceDocumentStore(blocker / "lancedb")
    message = str(failed.value)
    assert "\n" not in message and str(blocker / "lancedb") in message
    assert "cannot open" in message


def test_commit_conflicts_are_retried_and_other_errors_are_not(monkeypatch):
    """Lance's conflict errors (none arose in the bench's 4 concurrent writers) are retried with
    backoff; any other error surfaces at once."""
    from h3.resources.store import lance

    monkeypatch.setattr(lance, "COMMIT_BACKOFF_S", 0.001)
    calls: list[int] = []

    def conflicting_twice() -> str:
        calls.append(1)
        if len(calls) <= 2:
            raise RuntimeError("lance error: Retryable commit conflict for version 7")
        return "written"

    assert lance.with_commit_retries(conflicting_twice, "add chunks") == "written"
    assert len(calls) == 3

    def broken() -> None:
        calls.append(1)
        raise ValueError("schema mismatch: field vector")

    calls.clear()
    with pytest.raises(ValueError, match="schema mismatch"):
        lance.with_commit_retries(broken, "add chunks")
    assert len(calls) == 1
