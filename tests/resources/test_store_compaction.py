"""Compaction and version pruning of the document store (resources/store/compaction.py): what
an ingestion run leaves behind is pruned, search results do not move, a reader that started on a
pruned version still reads, and one bad table stops nothing."""

from __future__ import annotations

import time
from datetime import timedelta

import numpy as np
import pytest

from h3.resources.store import LanceDocumentStore
from h3.resources.store.compaction import compact_tables

WORDS = ("revenue", "margin", "dividend", "goodwill", "lease", "inventory", "pension", "tax",
         "segment", "backlog", "impairment", "buyback", "hedge", "warranty", "royalty", "freight")


def _chunk(doc: str, i: int) -> dict:
    """A chunk with its own words (a bag of 5-40 of WORDS, so BM25 scores rarely tie)."""
    rng = np.random.default_rng([int(doc[1:]), i])
    vector = rng.standard_normal(384).astype(np.float32)
    words = rng.choice(WORDS, size=int(rng.integers(5, 40)), p=np.linspace(2, 1, len(WORDS))
                       / np.linspace(2, 1, len(WORDS)).sum())
    return {"doc_id": doc, "chunk_id": f"{doc}:c{i}", "page": 1 + i % 5,
            "bbox": [0.0, 0.0, 10.0, 10.0], "text": " ".join(words),
            "section": "s", "kind": "text", "token_count": 8, "region_ids": [],
            "vector": (vector / np.linalg.norm(vector)).tolist(), "language": "en"}


def _ingested_like(path) -> LanceDocumentStore:
    """A store written as ingestion writes it: one append per document, an index build, a
    document replaced (delete + add) and another removed: many versions, dead rows."""
    store = LanceDocumentStore(path)
    for d in range(6):
        store.add("chunks", [_chunk(f"d{d}", i) for i in range(20)])
        store.upsert_document({"doc_id": f"d{d}", "source": f"d{d}.pdf", "status": "ok"})
    store.ensure_indexes("chunks")
    store.delete_document("d2", keep_documents_row=True)
    store.add("chunks", [_chunk("d2", i) for i in range(25)])
    store.delete_document("d5")
    return store


def _searches(store: LanceDocumentStore) -> list:
    """Vector and BM25 hits (id, score; equal scores in id order) and every row's id."""
    def ranked(rows: list[dict], score: str) -> list:
        return sorted(((round(r[score], 5), r["chunk_id"]) for r in rows),
                      key=lambda hit: (-hit[0] if score == "_score" else hit[0], hit[1]))

    query = np.asarray(_chunk("d1", 3)["vector"], np.float32)
    got = [ranked(store.vector_search("chunks", query, 10, columns=["chunk_id"]), "_distance")]
    for words in ("revenue margin", "goodwill", "tax lease royalty"):
        got.append(ranked(store.text_search("chunks", words, 10, columns=["chunk_id"]), "_score"))
    got.append(sorted(r["chunk_id"] for r in store.rows("chunks", columns=["chunk_id"])))
    return got


def _rebuilt(store: LanceDocumentStore, path) -> LanceDocumentStore:
    """The same rows written at once into a fresh store, indexed once."""
    fresh = LanceDocumentStore(path)
    fresh.add("chunks", store.rows("chunks"))
    fresh.ensure_indexes("chunks")
    return fresh


def test_compaction_prunes_every_older_version(tmp_path):
    store = _ingested_like(tmp_path / "db")
    vectors_before = _searches(store)[0]
    done = {d.table: d for d in compact_tables(store)}
    chunks = done["chunks"]
    assert chunks.error is None and chunks.versions_before >= 9
    assert chunks.versions_after == 1 and done["documents"].versions_after == 1
    assert chunks.bytes_after < chunks.bytes_before
    assert len(store.table("chunks").list_versions()) == 1
    after = _searches(store)
    assert after[0] == vectors_before  # exact vector search: the same rows, the same hits
    # BM25: the 25 rows appended after the index build are in it now, and the deleted ones
    # out of its statistics: the scores of an index built once on these rows
    assert after == _searches(_rebuilt(store, tmp_path / "fresh"))

    again = {d.table: d for d in compact_tables(store)}  # idempotent
    assert again["chunks"].versions_after == 1 and _searches(store) == after
    assert again["chunks"].bytes_after == chunks.bytes_after


def test_search_is_unchanged_when_the_indexes_were_up_to_date(tmp_path):
    """Ingestion's usual end: every row appended, then indexed; compaction moves no hit."""
    store = LanceDocumentStore(tmp_path / "db")
    for d in range(6):
        store.add("chunks", [_chunk(f"d{d}", i) for i in range(20)])
    store.ensure_indexes("chunks")
    before = _searches(store)
    assert compact_tables(store)[0].versions_after == 1
    assert _searches(store) == before


def test_versions_younger_than_the_window_stay(tmp_path):
    store = _ingested_like(tmp_path / "db")
    versions = len(store.table("chunks").list_versions())
    done = compact_tables(store, ["chunks"], keep_recent=timedelta(minutes=5))  # all just now
    assert done[0].error is None and done[0].versions_after >= versions


def test_a_reader_on_a_pruned_version_reads_the_latest_one(tmp_path):
    writer = _ingested_like(tmp_path / "db")
    reader = LanceDocumentStore(tmp_path / "db")  # another process's connection
    expected = sorted(r["chunk_id"] for r in reader.rows("chunks", columns=["chunk_id"]))
    pinned = reader.table("chunks")
    pinned.checkout(pinned.version)  # as a call that started on this version, mid-read
    compact_tables(writer, ["chunks"])  # its files are gone now
    with pytest.raises(RuntimeError, match="(?i)not found"):
        pinned.search().limit(None).to_arrow()  # what a read without the retry meets
    got = sorted(r["chunk_id"] for r in reader.rows("chunks", columns=["chunk_id"]))
    assert got == expected and len(pinned.list_versions()) == 1


def test_a_file_missing_on_every_try_is_a_real_error_once_the_retry_time_is_spent(monkeypatch):
    """The retry is bounded: a file missing from the latest version too raises, naming it."""
    from h3.resources.store import lance

    class Handle:
        checkouts = 0

        def checkout_latest(self):
            Handle.checkouts += 1

    def read():
        raise RuntimeError("lance error: Not found: /s/chunks.lance/data/x.lance")

    monkeypatch.setattr(lance, "MISSING_FILE_RETRY_S", 0.3)
    started = time.monotonic()
    with pytest.raises(RuntimeError, match="chunks.lance/data/x.lance"):
        lance.with_missing_file_retry(read, Handle())
    assert 0.3 <= time.monotonic() - started < 3 and Handle.checkouts >= 2
    with pytest.raises(RuntimeError, match="disk on fire"):  # any other error: no retry at all
        lance.with_missing_file_retry(lambda: (_ for _ in ()).throw(RuntimeError("disk on fire")),
                                      Handle())


def _read_until(path: str, stop, results) -> None:
    """Another process: reads the way recall does, until told to stop; puts (reads, errors)."""
    store = LanceDocumentStore(path)
    query = _chunk("d1", 3)["vector"]
    reads, errors = 0, []
    while not stop.is_set():
        try:
            store.rows("chunks", columns=["chunk_id", "text"])
            store.text_search("chunks", "revenue margin", 10)
            store.vector_search("chunks", query, 10, columns=["chunk_id"])
            reads += 1
        except Exception as exc:  # noqa: BLE001 - counted: the test says which
            errors.append(repr(exc)[:300])
    results.put((reads, errors))


def test_readers_in_other_processes_never_fail_while_compactions_prune(tmp_path):
    """Documents replaced and the table compacted (every older version pruned) over and over
    while another process reads: without the store's retry, ~1 read in 60 met a missing file;
    with five tries, CI's loaded machine once failed all five (the retry is bounded by time now)."""
    import multiprocessing

    writer = _ingested_like(tmp_path / "db")
    spawn = multiprocessing.get_context("spawn")  # lancedb's runtime does not survive a fork
    stop, results = spawn.Event(), spawn.Queue()
    reader = spawn.Process(target=_read_until, args=(str(tmp_path / "db"), stop, results))
    reader.start()
    try:
        deadline, rounds = time.monotonic() + 8, 0
        while time.monotonic() < deadline or rounds < 20:
            doc = f"d{rounds % 6}"
            writer.delete_document(doc, keep_documents_row=True)
            writer.add("chunks", [_chunk(doc, i) for i in range(20)])
            writer.ensure_indexes("chunks")
            assert compact_tables(writer, ["chunks"])[0].error is None
            rounds += 1
    finally:
        stop.set()
    reads, errors = results.get(timeout=60)
    reader.join(timeout=60)
    assert reads > 0 and errors == [], errors[:3]


def test_one_bad_table_does_not_stop_the_others(tmp_path, monkeypatch):
    store = _ingested_like(tmp_path / "db")
    real = store.table

    def table(name):
        if name == "documents":
            raise OSError("disk unhappy")
        return real(name)

    monkeypatch.setattr(store, "table", table)
    done = {d.table: d for d in compact_tables(store, ["documents", "chunks", "no_such_table"])}
    assert set(done) == {"documents", "chunks"}  # a table that does not exist is skipped
    assert done["documents"].error == "documents: OSError: disk unhappy"
    assert done["chunks"].error is None and done["chunks"].versions_after == 1


def test_a_store_without_files_has_nothing_to_compact():
    from tests.doubles import MemoryStore

    assert compact_tables(MemoryStore()) == []


def test_ingestion_leaves_one_version_of_its_tables(sample_corpus, h3_home):
    """Through Dagster (`h3 index-build`'s code path) on one small PDF: the run's last step
    compacts what the run wrote, and says so in the run's metadata."""
    from dagster import DagsterEventType

    from h3.pipelines.cli.index_build import ingest
    from h3.pipelines.instance import get_instance
    from h3.resources.store import open_store

    report = ingest([str(sample_corpus / "annual_report.pdf")])
    assert report["ok"] == 1
    store = open_store()
    for name in ("chunks", "regions", "documents"):
        assert len(store.table(name).list_versions()) == 1, name
    observed = get_instance().all_logs(report["run_ids"][0],
                                       of_type=DagsterEventType.ASSET_OBSERVATION)
    meta = next(e.asset_observation.metadata for e in observed
                if "compaction_bytes_after" in e.asset_observation.metadata)
    assert 0 < meta["compaction_bytes_after"].value <= meta["compaction_bytes_before"].value
    assert meta["compaction_failed_tables"].value == 0
