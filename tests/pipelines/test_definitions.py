"""The Dagster code location loads and holds the ingestion assets, job and sensor."""

from __future__ import annotations

from dagster import AssetKey


def test_definitions_load_with_every_ingestion_stage():
    from pipelines.definitions import defs

    defs.validate_loadable(defs)
    graph = defs.resolve_asset_graph()
    stages = ["documents", "layout", "tables", "figures", "ocr", "chunks", "embeddings",
              "cold_store"]
    for stage in stages:
        assert AssetKey(stage) in graph.get_all_asset_keys(), stage
    job = defs.resolve_job_def("ingest_documents")
    assert {n.name for n in job.nodes} >= set(stages)
    assert defs.resolve_sensor_def("inbox_sensor") is not None
    # No pickling IO manager on the ingestion path.
    for stage in stages:
        assert graph.get(AssetKey(stage)).io_manager_key == "staging_io"
