"""The semantic stages through the real Dagster pipeline on small real PDFs: knowledge graph,
structure index, token PCA, learned pooling, document index, their checks, and recall."""

import json
from pathlib import Path

import pymupdf
import pytest

from h3.ontology.boxes import iou
from tests.conftest import h3_home_env

KG = Path(__file__).resolve().parents[1] / "fixtures" / "kg"
NEWS = ["northwind_acquires_bluefin", "tandem_motors", "atlas_semiconductor"]


@pytest.fixture(scope="module")
def news_home(tmp_path_factory):
    """Three synthetic news PDFs ingested with every per-document stage, then compressed."""
    from h3.pipelines.cli.index_build import ingest
    from h3.pipelines.runs import run_job
    from tests.fixtures.news_corpus import write_article

    base = tmp_path_factory.mktemp("news")
    docs = {d["name"]: d for d in json.loads((KG / "company_news.json").read_text())["documents"]}
    for name in NEWS:
        write_article(docs[name], base / "corpus" / f"{name}.pdf")
    with h3_home_env(base / "h3") as home:
        report = ingest([str(base / "corpus")])
        compressed = run_job("compress_corpus")
    return {"home": home, "report": report, "compress": compressed}


def test_definitions_hold_the_semantic_stages_checks_and_jobs():
    from dagster import AssetKey

    from h3.pipelines.definitions import defs

    graph = defs.resolve_asset_graph()
    per_document = ["knowledge_graph", "structures", "figure_embeddings", "token_vectors"]
    corpus = ["token_pca", "chunk_pooling", "doc_index"]
    for key in per_document + corpus:
        assert AssetKey(key) in graph.get_all_asset_keys(), key
    for key in per_document:  # JSON staging, never the pickling default
        assert graph.get(AssetKey(key)).io_manager_key == "staging_io"
    ingest = {n.name for n in defs.resolve_job_def("ingest_documents").nodes}
    compress = {n.name for n in defs.resolve_job_def("compress_corpus").nodes}
    assert set(per_document) <= ingest and set(corpus) <= compress
    checks = {k.name for k in graph.asset_check_keys}
    assert {"edges_have_provenance", "pca_variance_check", "pooling_separation_check",
            "every_document_has_chunks"} <= checks


@pytest.mark.slow
def test_graph_edges_have_provenance_and_entities_are_shared_across_documents(news_home):
    from h3.resources.store import open_store

    assert news_home["report"]["ok"] == 3
    with h3_home_env(news_home["home"]):
        store = open_store()
        edges = store.rows("edges", "relation != 'mentions'")
        nodes = {n["name"]: n for n in store.rows("entities")}
    assert len(edges) >= 8
    for e in edges:
        assert e["page"] >= 1 and len(e["bbox"]) == 4 and e["sentence"] and e["doc_id"]
    # Tandem Motors is named in its own article and in Atlas Semiconductor's: one node
    assert len(nodes["Tandem Motors"]["doc_ids"]) == 2
    assert nodes["Hiroshi Tanaka"]["type"] == "PERSON"
    assert nodes["Rotterdam"]["type"] == "GPE"


@pytest.mark.slow
def test_relation_recall_answers_with_the_supporting_sentence(news_home):
    from h3.resources.recall import recall
    from h3.resources.store import open_store

    with h3_home_env(news_home["home"]):
        store = open_store()
        acquired, ceo, plain = recall(store, [
            "Which company did Tandem Motors acquire?",
            "Who is the chief executive of Northwind Robotics?",
            "How many people work there?"], k=5)
        by_relation = recall(store, ["Who acquired Bluefin Analytics?"], k=3, mode="relation")[0]
    top = acquired["hits"][0]
    assert "relation" in acquired["intent"] and top["via"] == "relation"
    assert {e["text"] for e in top["entities"]} == {"Tandem Motors", "Lumen Batteries"}
    assert "acquisition of Lumen Batteries" in top["text"] and top["page"] == 1
    assert ceo["hits"][0]["via"] == "relation"
    assert "Maria Kovacs" in {e["text"] for e in ceo["hits"][0]["entities"]}
    assert plain["intent"] == ["text"] and plain["hits"]  # no entity: text recall still answers
    assert by_relation["intent"] == ["relation"]
    assert by_relation["hits"][0]["entities"][0]["text"] == "Northwind Robotics"


@pytest.mark.slow
def test_compression_job_writes_artifacts_and_passes_its_checks(news_home):
    from h3.resources.semantic.artifacts import load_tensors
    from h3.resources.semantic.doc_index import load_index
    from h3.resources.store import open_store

    result = news_home["compress"]
    assert result["success"], result
    assert all(result["checks"].values()) and len(result["checks"]) == 3
    pca = result["assets"]["token_pca"]
    assert pca["dim"] == 128 and 0.6 <= pca["explained_variance"] <= 1.0
    with h3_home_env(news_home["home"]) as home:
        _, lineage = load_tensors(home / "semantic" / "chunk_pooler.safetensors")
        index, doc_ids = load_index(home / "semantic" / "doc_index.faiss")
        store = open_store()
        assert store.count_rows("chunk_summaries") == store.count_rows("chunks")
    assert lineage["seed"] == 0 and lineage["in_dim"] == 128
    assert index.ntotal == len(doc_ids) == 3 and index.d == 1024
    assert result["assets"]["doc_index"]["index"] == "exact"  # 3 documents: nothing to train


@pytest.mark.slow
def test_config_switches_surface_in_the_assets(news_home, tmp_path, monkeypatch):
    from dagster import materialize

    from h3.assets.entities import knowledge_graph
    from h3.assets.pca import token_pca
    from h3.pipelines.definitions import ASSETS, RESOURCES
    from h3.pipelines.instance import get_instance
    from h3.pipelines.partitions import partition_keys_by_doc
    from h3.resources.store import open_store

    off = tmp_path / "kg_off.yaml"
    off.write_text("cold_storage:\n  knowledge_graph_enabled: false\n")
    bad = tmp_path / "pca64.yaml"
    bad.write_text("hbf:\n  compression_pca_dim: 64\n")
    with h3_home_env(news_home["home"]):
        store = open_store()
        doc_id = sorted(store.ok_doc_ids())[0]
        store.delete_where("edges", f"doc_id = '{doc_id}'")
        monkeypatch.setenv("H3_CONFIG", str(off))
        key = partition_keys_by_doc(get_instance())[doc_id]  # `<file name>-<doc_id>`
        res = materialize(ASSETS, selection=[knowledge_graph],
                          partition_key=key, resources=RESOURCES, instance=get_instance())
        assert res.success and store.rows("edges", f"doc_id = '{doc_id}'") == []
        meta = res.asset_materializations_for_node("knowledge_graph")[0].metadata
        assert "knowledge_graph_enabled: false" in meta["skipped"].value
        monkeypatch.setenv("H3_CONFIG", str(bad))
        res = materialize(ASSETS, selection=[token_pca], resources=RESOURCES, instance=get_instance(),
                          raise_on_error=False)
    assert not res.success
    failure = next(e for e in res.all_events if e.event_type_value == "STEP_FAILURE")
    assert "compression_pca_dim" in str(failure.event_specific_data.error)


@pytest.mark.slow
def test_structural_recall_finds_the_table_and_the_figure(ingested_sample):
    from h3.resources.recall import recall
    from h3.resources.store import open_store

    with h3_home_env(ingested_sample["home"]):
        table, chart_zh, plain = recall(open_store(), [
            "Show me the table of quarterly results", "显示按季度的收入图表",
            "What was the total revenue in 2023?"], k=5)
    pdf = pymupdf.open(ingested_sample["corpus"] / "annual_report.pdf")
    top = table["hits"][0]
    assert "structure" in table["intent"] and top["via"] == "structure" and top["kind"] == "table"
    ruled = [list(t.bbox) for p in pdf for t in p.find_tables(use_layout=False).tables
             if p.number + 1 == top["page"]]
    assert max(iou(top["bbox"], r) for r in ruled) >= 0.5
    assert "structure" in chart_zh["intent"]
    assert any(h["via"] == "structure" and h["kind"] == "figure" for h in chart_zh["hits"])
    assert "structure" not in plain["intent"] and plain["hits"]
