"""The Dagster code location loads and holds the ingestion assets, job and sensor."""

from __future__ import annotations

from dagster import AssetKey


def test_definitions_load_with_every_ingestion_stage():
    from h3.pipelines.definitions import defs

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


def test_assets_are_grouped_by_concern_with_kinds():
    from h3.assets.groups import GROUPS
    from h3.pipelines.definitions import defs

    graph = defs.resolve_asset_graph()
    nodes = {k.to_user_string(): graph.get(k) for k in graph.get_all_asset_keys()}
    groups: dict[str, set[str]] = {}
    for name, node in nodes.items():
        groups.setdefault(node.group_name, set()).add(name)
    assert set(groups) == set(GROUPS)  # 6 concerns, each described, not one group per stage
    assert {"documents", "cold_store", "ingested_documents"} <= groups["ingestion"]
    assert {"token_pca", "chunk_pooling", "doc_index"} <= groups["compression"]
    for name, kind in [("documents", "pdf"), ("cold_store", "lancedb"), ("doc_index", "faiss"),
                       ("embeddings", "torch")]:
        assert kind in nodes[name].kinds, name
    assert all(node.description for node in nodes.values())
