"""The inbox sensor, evaluated with `build_sensor_context` and its cursor on a real instance:
new PDFs are registered and ingested, unchanged ones are skipped without hashing, a changed PDF
is ingested again and replaces its old version, a removed PDF is deleted everywhere."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pymupdf
import pytest
from dagster import RunRequest, SensorResult, SkipReason, build_sensor_context


def one_page_pdf(path: Path, text: str, age_s: float = 60.0) -> Path:
    """A one-page PDF with `text`, its mtime set `age_s` in the past (settled)."""
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((72, 160), text.split(".")[0], fontsize=16)
    body = (f"{text} This paragraph is part of the operations test corpus. It is long enough to "
            "be laid out as body text by the layout model and chunked like any other page. ") * 3
    page.insert_textbox(pymupdf.Rect(72, 190, 520, 600), body, fontsize=11)
    doc.save(path)
    past = time.time() - age_s
    os.utime(path, (past, past))
    return path


def tick(instance, cursor: str | None):
    from h3.pipelines.sensors import inbox_sensor

    # closed after the tick (an open context leaves its instance as Dagster's process-wide
    # defs-state storage: test_schedules.py's _tick)
    with build_sensor_context(instance=instance, cursor=cursor) as context:
        result = inbox_sensor(context)
        if isinstance(result, SensorResult):
            return result, result.cursor
        return result, context.cursor


def requests(result, job: str) -> list[RunRequest]:
    return [r for r in getattr(result, "run_requests", None) or [] if r.job_name == job]


def requested_docs(instance, request: RunRequest) -> list[str]:
    """The documents (doc ids) one ingestion run covers (a single partition or a range)."""
    from h3.ontology.ids import doc_id_of_partition

    tags = request.tags
    if "dagster/partition" in tags:
        return [doc_id_of_partition(tags["dagster/partition"])]
    keys = instance.get_dynamic_partitions("documents")
    start = keys.index(tags["dagster/asset_partition_range_start"])
    return [doc_id_of_partition(k)
            for k in keys[start:keys.index(tags["dagster/asset_partition_range_end"]) + 1]]


def partitions(instance) -> list[str]:
    """The document partitions' keys, as the UI's partition picker lists them."""
    return instance.get_dynamic_partitions("documents")


def doc_ids(cursor: str) -> dict[str, str]:
    return {Path(p).name: e[2] for p, e in json.loads(cursor)["files"].items()}


def test_cursor_tracks_new_unchanged_changed_and_removed_files(h3_home):
    from h3.pipelines.definitions import defs
    from h3.pipelines.instance import get_instance
    from h3.resources.store import open_store

    instance, store = get_instance(), open_store()
    inbox = h3_home / "inbox"
    inbox.mkdir()
    one_page_pdf(inbox / "a.pdf", "Alpha report. Revenue grew by 12 percent.")
    one_page_pdf(inbox / "b.pdf", "Beta memo. The plant in Lyon closes in March.")

    result, cursor = tick(instance, None)
    (ingest,) = requests(result, "ingest_documents")  # one run for the batch
    ids = doc_ids(cursor)
    assert sorted(requested_docs(instance, ingest)) == sorted(ids.values())
    # readable keys: the file's name, then its doc_id
    assert set(partitions(instance)) == {f"{name}-{d}" for name, d in ids.items()}
    assert {store.get_document(d)["status"] for d in ids.values()} == {"pending"}

    result, cursor2 = tick(instance, cursor)  # nothing changed: skip, same cursor
    assert isinstance(result, SkipReason) and cursor2 == cursor

    fresh = one_page_pdf(inbox / "c.pdf", "Gamma notes, still being copied.", age_s=0)
    result, cursor3 = tick(instance, cursor)  # too recent: left for the next tick
    assert isinstance(result, SkipReason) and "c.pdf" not in doc_ids(cursor3)
    fresh.unlink()

    one_page_pdf(inbox / "b.pdf", "Beta memo, revised. The plant in Lyon stays open.")
    result, cursor = tick(instance, cursor)
    (changed,) = requests(result, "ingest_documents")
    new_b = doc_ids(cursor)["b.pdf"]
    assert requested_docs(instance, changed) == [new_b] and new_b != ids["b.pdf"]
    assert not requests(result, "delete_documents")  # the old version is replaced at ingestion

    (inbox / "a.pdf").unlink()
    result, cursor = tick(instance, cursor)
    (deletion,) = requests(result, "delete_documents")
    assert deletion.run_config["ops"]["delete_documents_op"]["config"]["doc_ids"] == [ids["a.pdf"]]
    assert "a.pdf" not in doc_ids(cursor)
    run = defs.resolve_job_def("delete_documents").execute_in_process(
        run_config=deletion.run_config, instance=instance)
    assert run.success and store.get_document(ids["a.pdf"]) is None
    # a's partition gone; b's old version stays until the new one's ingestion replaces it
    assert partitions(instance) == [f"b.pdf-{ids['b.pdf']}", f"b.pdf-{new_b}"]

    result, _ = tick(instance, cursor)
    assert isinstance(result, SkipReason)


def test_a_document_held_by_another_path_is_not_deleted(h3_home, tmp_path, monkeypatch):
    """The same bytes ingested from elsewhere (source outside the inbox) survive the inbox copy
    being removed; $H3_INBOX picks the folder."""
    from h3.pipelines.instance import get_instance
    from h3.pipelines.registry import register
    from h3.resources.store import open_store

    inbox = tmp_path / "shared-inbox"
    inbox.mkdir()
    monkeypatch.setenv("H3_INBOX", str(inbox))
    elsewhere = one_page_pdf(tmp_path / "original.pdf", "Delta contract, signed 3 May 2024.")
    store = open_store()
    original = register(store, elsewhere)
    store.upsert_document({**store.get_document(original.doc_id), "status": "ok"})  # ingested
    (inbox / "copy.pdf").write_bytes(elsewhere.read_bytes())
    os.utime(inbox / "copy.pdf", (time.time() - 60, time.time() - 60))
    instance = get_instance()
    _, cursor = tick(instance, None)
    assert doc_ids(cursor) == {"copy.pdf": original.doc_id}
    (inbox / "copy.pdf").unlink()
    result, cursor = tick(instance, cursor)
    assert not requests(result, "delete_documents") and doc_ids(cursor) == {}
    assert store.get_document(original.doc_id) is not None


@pytest.mark.slow
def test_inbox_end_to_end_ingest_replace_delete(h3_home):
    """Real runs of what the sensor requests: ingest, change (old version fully replaced),
    remove (nothing of it left: rows, crops, partition)."""
    from h3.pipelines.definitions import defs
    from h3.pipelines.instance import get_instance
    from h3.resources.recall import recall
    from h3.resources.store import open_store

    instance, store = get_instance(), open_store()
    ingest_job = defs.resolve_job_def("ingest_documents")
    inbox = h3_home / "inbox"
    inbox.mkdir()
    pdf = one_page_pdf(inbox / "memo.pdf", "Omega memo. The Zurich office opens on 4 June 2025.")

    def run_requested(cursor):
        result, cursor = tick(instance, cursor)
        for r in requests(result, "ingest_documents"):
            assert ingest_job.execute_in_process(instance=instance, tags=r.tags).success
        for r in requests(result, "delete_documents"):
            assert defs.resolve_job_def("delete_documents").execute_in_process(
                run_config=r.run_config, instance=instance).success
        return cursor

    cursor = run_requested(None)
    first = doc_ids(cursor)["memo.pdf"]
    assert store.ok_doc_ids() == {first}
    hits = recall(store, ["When does the Zurich office open?"], k=3)[0]["hits"]
    assert hits and hits[0]["doc_id"] == first

    one_page_pdf(pdf, "Omega memo, revised. The Geneva office opens on 9 July 2025.")
    cursor = run_requested(cursor)
    second = doc_ids(cursor)["memo.pdf"]
    assert second != first and store.ok_doc_ids() == {second}
    assert {r["doc_id"] for r in store.rows("documents")} == {second}
    assert partitions(instance) == [f"memo.pdf-{second}"]
    assert not store.rows("chunks", f"doc_id = '{first}'")
    assert not list((h3_home / "staging").glob(f"**/{first}.json"))

    pdf.unlink()
    run_requested(cursor)
    assert store.ok_doc_ids() == set() and store.rows("documents") == []
    for table in store.doc_scoped_tables():
        assert store.count_rows(table) == 0, table
    assert partitions(instance) == []
    assert not list((h3_home / "staging").glob(f"**/{second}.json"))
