"""The reuse and analysis assets are in the code location, with their lineage and jobs."""

from __future__ import annotations

from dagster import AssetKey


def test_kv_and_analysis_assets_are_wired():
    from h3.pipelines.definitions import defs

    graph = defs.resolve_asset_graph()
    kv = graph.get(AssetKey("document_kv"))
    assert AssetKey("cold_store") in kv.parent_keys  # lineage from the stored chunks
    assert kv.partitions_def is not None and kv.code_version.startswith("kv-format-")
    for name in ("document_summary", "key_facts"):
        node = graph.get(AssetKey(name))
        assert AssetKey("document_kv") in node.parent_keys and node.partitions_def is not None
    cross = graph.get(AssetKey("cross_document_checks"))
    assert AssetKey("key_facts") in cross.parent_keys and cross.partitions_def is None
    job = defs.resolve_job_def("prefill_and_analyse")
    assert {n.name for n in job.nodes} == {"document_kv", "document_summary", "key_facts"}
    assert defs.resolve_job_def("cross_check_documents") is not None
