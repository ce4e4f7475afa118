"""Readable partition keys (issue 37 item 7): `<file name>-<doc_id>`, mapped back to the doc_id
(which stays THE id of every row, payload and JSON output); old stores' bare-doc_id keys renamed
on first use; a failed partition's run and `h3 list` name the file."""

from __future__ import annotations

import json
import time
from types import SimpleNamespace

import pymupdf
import pytest

from h3.ontology.ids import (
    PARTITION_NAME_CHARS,
    doc_id_of_partition,
    is_legacy_partition_key,
    partition_key_for,
)

DOC = "3f9a1c2b4d5e6f70"


def _pdf(path, text: str):
    doc = pymupdf.open()
    doc.new_page().insert_text((72, 72), text)
    path.parent.mkdir(parents=True, exist_ok=True)
    doc.save(path)
    return path


def _row(doc_id: str, source: str, status: str = "ok", reason: str | None = None) -> dict:
    return {"doc_id": doc_id, "source": source, "content_hash": doc_id, "status": status,
            "reason": reason, "pages": 1, "title": None,
            "metadata_json": json.dumps({"counts": {"chunks": 3}}), "bytes": 10,
            "updated_at": time.time()}


# --- the key format ---------------------------------------------------------------------------

def test_key_is_the_file_name_then_the_doc_id_and_maps_back():
    key = partition_key_for("/data/in/annual-report-2023.pdf", DOC)
    assert key == f"annual-report-2023.pdf-{DOC}"
    assert doc_id_of_partition(key) == DOC
    assert doc_id_of_partition(DOC) == DOC  # an old-style key is the doc_id itself
    assert is_legacy_partition_key(DOC) and not is_legacy_partition_key(key)


@pytest.mark.parametrize("name, expected", [
    ("Annual Report 2023 (final).PDF", "Annual-Report-2023-final.PDF"),
    ("a,b|c[d]...e.pdf", "a-b-c-d-e.pdf"),       # Dagster's selection separators, its range "..."
    ("..hidden.pdf", "hidden.pdf"),               # never a leading dot (a path trick)
    ("年报 2023.pdf", "年报-2023.pdf"),               # letters of any script stay readable
    ("tab\tand\nnewline.pdf", "tab-and-newline.pdf"),  # Dagster refuses control characters
    ("", "document"), (None, "document"),
])
def test_names_are_sanitised_for_dagster(name, expected):
    from dagster._core.definitions.partitions.utils.base import (
        raise_error_on_invalid_partition_key_substring,
    )

    key = partition_key_for(name, DOC)
    assert key == f"{expected}-{DOC}" and doc_id_of_partition(key) == DOC
    raise_error_on_invalid_partition_key_substring([key])  # Dagster's own rule
    assert not set(",|[]/\\") & set(key)


def test_long_names_are_cut_and_garbage_keys_refused():
    key = partition_key_for("x" * 300 + ".pdf", DOC)
    assert key == "x" * PARTITION_NAME_CHARS + f".pdf-{DOC}"
    with pytest.raises(ValueError, match="not a document partition key"):
        doc_id_of_partition("report.pdf")
    with pytest.raises(ValueError, match="not a document id"):
        partition_key_for("report.pdf", "../../etc")


def test_stages_loop_over_doc_ids_whatever_the_key():
    from h3.assets._batch import per_document

    context = SimpleNamespace(partition_keys=[f"a.pdf-{DOC}", "b" * 16],
                              assets_def=SimpleNamespace(key=SimpleNamespace(
                                  to_user_string=lambda: "documents")),
                              log=SimpleNamespace(warning=print))
    out = per_document(context, lambda doc_id: {"seen": doc_id})
    assert list(out) == [DOC, "b" * 16] and out[DOC]["seen"] == DOC


# --- partitions of registered files ---------------------------------------------------------

def test_same_name_different_content_gets_different_keys(h3_home, tmp_path):
    from h3.pipelines.instance import get_instance
    from h3.pipelines.partitions import add_partitions, contiguous_batches, range_tags
    from h3.pipelines.registry import register_many
    from h3.resources.store import open_store

    one = _pdf(tmp_path / "2023" / "report.pdf", "Revenue grew 12 percent.")
    two = _pdf(tmp_path / "2024" / "report.pdf", "Revenue fell 3 percent.")
    store, instance = open_store(), get_instance()
    ids = [r.doc_id for r in register_many(store, [one, two])]
    added = add_partitions(instance, ids)
    assert added == [f"report.pdf-{ids[0]}", f"report.pdf-{ids[1]}"] and ids[0] != ids[1]
    assert instance.get_dynamic_partitions("documents") == added
    assert add_partitions(instance, ids) == []  # idempotent
    assert contiguous_batches(instance, ids, 16) == [ids]  # batches stay in doc ids
    assert range_tags(ids, instance) == {"dagster/asset_partition_range_start": added[0],
                                         "dagster/asset_partition_range_end": added[1]}
    assert range_tags(ids[:1], instance) == {"dagster/partition": added[0]}


def test_same_content_under_two_names_is_one_partition(h3_home, tmp_path):
    """As before keys were readable: one content, one document, one partition. Its name is the
    file the documents row records (the last one registered in the same call); a later name
    for the same bytes keeps the existing key."""
    from h3.pipelines.instance import get_instance
    from h3.pipelines.partitions import add_partitions
    from h3.pipelines.registry import register, register_many
    from h3.resources.store import open_store

    first = _pdf(tmp_path / "a.pdf", "Same bytes.")
    copy = tmp_path / "b.pdf"
    copy.write_bytes(first.read_bytes())
    store, instance = open_store(), get_instance()
    regs = register_many(store, [first, copy])
    doc_id = regs[0].doc_id
    assert regs[1].doc_id == doc_id
    assert add_partitions(instance, [r.doc_id for r in regs]) == [f"b.pdf-{doc_id}"]
    assert store.get_document(doc_id)["source"] == str(copy.resolve())

    later = tmp_path / "c.pdf"
    later.write_bytes(first.read_bytes())
    assert register(store, later).doc_id == doc_id  # pending: registered again, same id
    assert add_partitions(instance, [doc_id]) == []
    assert instance.get_dynamic_partitions("documents") == [f"b.pdf-{doc_id}"]


def test_delete_removes_readable_and_old_style_partitions(h3_home):
    from h3.pipelines.deletion import delete_document
    from h3.pipelines.instance import get_instance

    instance = get_instance()
    instance.add_dynamic_partitions("documents", [f"a.pdf-{DOC}", "b" * 16, f"c.pdf-{'c' * 16}"])
    delete_document(DOC, instance=instance)
    delete_document("b" * 16, instance=instance)
    assert instance.get_dynamic_partitions("documents") == [f"c.pdf-{'c' * 16}"]


# --- migrating a store made with doc-id keys ---------------------------------------------------

def test_old_store_partitions_are_renamed_once_and_nothing_is_lost(h3_home):
    from h3.pipelines.instance import get_instance
    from h3.pipelines.partitions import add_partitions, migrate_partition_keys
    from h3.resources.store import open_store

    store, instance = open_store(), get_instance()
    a, b, orphan = "a" * 16, "b" * 16, "c" * 16
    store.upsert_document(_row(a, "/in/Annual Report.pdf"))
    store.upsert_document(_row(b, "/in/memo.pdf", "failed", "/in/memo.pdf: not a PDF"))
    instance.add_dynamic_partitions("documents", [a, b, orphan])  # the old style: bare doc ids
    staged = h3_home / "staging" / "chunks" / f"{a}.json"
    staged.parent.mkdir(parents=True)
    staged.write_text('{"status": "ok"}')
    rows_before = sorted(store.rows("documents"), key=lambda r: r["doc_id"])

    renamed = migrate_partition_keys(instance, store)
    expected = [f"Annual-Report.pdf-{a}", f"memo.pdf-{b}", f"document-{orphan}"]
    assert renamed == dict(zip([a, b, orphan], expected, strict=True))
    assert instance.get_dynamic_partitions("documents") == expected  # same order
    assert [doc_id_of_partition(k) for k in expected] == [a, b, orphan]  # ids unchanged
    assert sorted(store.rows("documents"), key=lambda r: r["doc_id"]) == rows_before
    assert staged.exists()

    assert migrate_partition_keys(instance, store) == {}  # twice: nothing changes
    assert add_partitions(instance, [a, b]) == []  # (add_partitions migrates first; no-op now)
    assert instance.get_dynamic_partitions("documents") == expected


def test_migration_runs_on_first_use_and_waits_for_runs_that_name_old_keys(h3_home):
    from dagster import DagsterRunStatus
    from dagster._core.storage.dagster_run import DagsterRun

    from h3.pipelines.instance import get_instance
    from h3.pipelines.partitions import add_partitions
    from h3.resources.store import open_store

    store, instance = open_store(), get_instance()
    a, b = "a" * 16, "b" * 16
    store.upsert_document(_row(a, "/in/a.pdf"))
    store.upsert_document(_row(b, "/in/b.pdf"))
    instance.add_dynamic_partitions("documents", [a])
    running = instance.add_run(DagsterRun(job_name="ingest_documents", run_id="r" * 8,
                                          status=DagsterRunStatus.STARTED,
                                          tags={"dagster/partition": a}))
    # a run still resolving its partition `a`: the old key stays, the new document is added
    assert add_partitions(instance, [b]) == [f"b.pdf-{b}"]
    assert instance.get_dynamic_partitions("documents") == [a, f"b.pdf-{b}"]
    instance.delete_run(running.run_id)
    assert add_partitions(instance, [a, b]) == []  # first use once it is done: renamed
    assert instance.get_dynamic_partitions("documents") == [f"b.pdf-{b}", f"a.pdf-{a}"]


def test_staged_payloads_load_under_readable_keys(h3_home):
    from dagster import AssetKey, build_input_context

    from h3.assets.partitioning import DOCUMENTS_PARTITIONS
    from h3.pipelines.instance import get_instance
    from h3.resources.staging_io import JsonStagingIOManager

    instance = get_instance()
    key = f"a.pdf-{DOC}"
    instance.add_dynamic_partitions("documents", [key])
    staged = h3_home / "staging" / "chunks" / f"{DOC}.json"
    staged.parent.mkdir(parents=True)
    staged.write_text('{"status": "ok", "n": 1}')
    context = build_input_context(asset_key=AssetKey("chunks"), partition_key=key,
                                  asset_partitions_def=DOCUMENTS_PARTITIONS, instance=instance)
    assert JsonStagingIOManager().load_input(context) == {DOC: {"status": "ok", "n": 1}}


# --- what names the file: the failed run, h3 list ----------------------------------------------

def test_failed_partition_run_names_its_file(h3_home):
    from dagster import AssetKey, materialize

    from h3.assets.ingested import ingested_documents
    from h3.pipelines.instance import get_instance
    from h3.pipelines.partitions import add_partitions
    from h3.resources.store import DocumentStoreResource, open_store

    store, instance = open_store(), get_instance()
    store.upsert_document(_row(DOC, "/in/broken scan.pdf", "failed", "encrypted, no password"))
    (key,) = add_partitions(instance, [DOC])
    assert key == f"broken-scan.pdf-{DOC}"
    result = materialize([ingested_documents], partition_key=key, instance=instance,
                         resources={"store": DocumentStoreResource()}, raise_on_error=False)
    assert not result.success
    message = result.get_step_failure_events()[0].step_failure_data.error.message
    assert "broken scan.pdf: encrypted, no password" in message
    tags = instance.get_run_by_id(result.run_id).tags
    assert tags["h3/file"] == tags["h3/failed_files"] == "broken scan.pdf"
    records = instance.fetch_observations(AssetKey("ingested_documents"), limit=10).records
    # one observation for the failed partition, one (no partition) for the run's compaction
    (observed,) = [r for r in records if r.asset_observation.partition is not None]
    assert any("compaction_bytes_after" in r.asset_observation.metadata for r in records)
    observation = observed.asset_observation
    assert observation.partition == key
    assert observation.metadata["file"].value == "broken scan.pdf"
    assert observation.metadata["doc_id"].value == DOC


def test_list_json_carries_the_partition_key(h3_home, capsys):
    from h3.pipelines.cli.main import main
    from h3.pipelines.instance import get_instance
    from h3.pipelines.partitions import add_partitions
    from h3.resources.store import open_store

    store = open_store()
    good, bad, unrun = "a" * 16, "b" * 16, "c" * 16
    store.upsert_document(_row(good, "/in/report.pdf"))
    store.upsert_document(_row(bad, "/in/memo.pdf", "failed", "/in/memo.pdf: not a PDF"))
    store.upsert_document(_row(unrun, "/in/empty.pdf", "failed", "/in/empty.pdf: empty file"))
    add_partitions(get_instance(), [good, bad])  # `empty.pdf` failed the checks: no partition
    assert main(["list", "--json"]) == 0
    listed = {d["doc_id"]: d for d in json.loads(capsys.readouterr().out)}
    assert listed[good]["partition_key"] == f"report.pdf-{good}"
    assert listed[bad]["partition_key"] == f"memo.pdf-{bad}"
    assert listed[bad]["source"] == "/in/memo.pdf" and listed[bad]["status"] == "failed"
    assert listed[unrun]["partition_key"] is None
    assert set(listed[good]) >= {"doc_id", "source", "status", "reason", "pages", "chunks"}
    assert main(["list", "--status", "failed"]) == 0
    text = capsys.readouterr().out
    assert f"memo.pdf-{bad}" in text and "not a PDF" in text
