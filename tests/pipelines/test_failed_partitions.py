"""A document that fails ingestion fails visibly in Dagster: its partition of
`ingested_documents` is Failed (the others Materialized, with their file name), the run is a
Failure naming the file and the reason, the good documents are stored anyway, and the next good
run of the same file clears it."""

from __future__ import annotations

import pytest
from dagster import AssetKey

from tests.fixtures.make_sample_corpus import lab_handbook


def _statuses(instance, asset: str) -> tuple[set, set]:
    from dagster._core.storage.partition_status_cache import (
        get_and_update_asset_status_cache_value,
    )

    from h3.pipelines.partitions import DOCUMENTS_PARTITIONS as parts

    value = get_and_update_asset_status_cache_value(instance, AssetKey(asset), parts,
                                                    dynamic_partitions_loader=instance)
    return (set(value.deserialize_materialized_partition_subsets(parts).get_partition_keys()),
            set(value.deserialize_failed_partition_subsets(parts).get_partition_keys()))


@pytest.mark.slow
def test_failed_document_fails_its_partition_and_the_next_good_run_clears_it(h3_home, tmp_path):
    import pymupdf

    from h3.pipelines.definitions import defs
    from h3.pipelines.ingest_runs import QUIET, _crashed
    from h3.pipelines.instance import get_instance
    from h3.pipelines.partitions import add_partitions, partition_keys_by_doc, range_tags
    from h3.pipelines.registry import register_many
    from h3.resources.store import open_store

    good, flaky = tmp_path / "handbook.pdf", tmp_path / "memo.pdf"
    lab_handbook(good)
    memo = pymupdf.open()
    memo.new_page().insert_text((72, 72), "Memo: the loading dock closes at 6 pm on Fridays.")
    memo.save(flaky)
    store, instance = open_store(), get_instance()
    regs = register_many(store, [good, flaky])
    ids = [r.doc_id for r in regs]
    add_partitions(instance, ids)
    keys = partition_keys_by_doc(instance)
    assert [keys[i] for i in ids] == [f"handbook.pdf-{ids[0]}", f"memo.pdf-{ids[1]}"]
    saved = flaky.read_bytes()
    flaky.unlink()  # gone between registration and the run: that document fails, alone
    job = defs.resolve_job_def("ingest_documents")
    order = instance.get_dynamic_partitions("documents")
    batch = sorted(ids, key=lambda d: order.index(keys[d]))
    first = job.execute_in_process(run_config=QUIET, instance=instance,
                                   tags=range_tags(batch, instance), raise_on_error=False)
    assert not first.success and not _crashed(first)  # failed for a document, not a crash
    failure = first.get_step_failure_events()[0].step_failure_data.error.message
    assert "memo.pdf" in failure and "cannot read" in failure
    run = instance.get_run_by_id(first.run_id)
    assert run.tags["h3/failed_files"] == "memo.pdf"
    assert set(run.tags["h3/files"].split(", ")) == {"handbook.pdf", "memo.pdf"}
    assert _statuses(instance, "ingested_documents") == ({keys[ids[0]]}, {keys[ids[1]]})
    assert store.ok_doc_ids() == {ids[0]}  # the good one is stored anyway
    materialization = instance.get_latest_materialization_event(
        AssetKey("ingested_documents")).asset_materialization
    assert materialization.metadata["file"].value == "handbook.pdf"
    assert materialization.metadata["doc_id"].value == ids[0]
    assert materialization.partition == keys[ids[0]]

    flaky.write_bytes(saved)  # back: the same bytes, the same partition, now good
    second = job.execute_in_process(run_config=QUIET, instance=instance,
                                    tags=range_tags([ids[1]], instance), raise_on_error=False)
    assert second.success
    assert _statuses(instance, "ingested_documents") == (set(keys.values()), set())
    assert store.ok_doc_ids() == set(ids)
