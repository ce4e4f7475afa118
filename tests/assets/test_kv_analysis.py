"""The kv and analysis assets materialised through Dagster on the ingested sample corpus, with a
tiny random Llama (real tokenizer) standing in for the default model (mechanics, not quality)."""

from __future__ import annotations

import json

import pytest
from dagster import DagsterInstance, materialize

from h3.assets.analysis import cross_document_checks, document_summary, key_facts
from h3.assets.kv import document_kv
from h3.resources.runtime import H3RuntimeResource
from h3.resources.staging_io import JsonStagingIOManager
from h3.resources.store import DocumentStoreResource, open_store
from tests.assets._runtime_fixtures import copy_store, tiny_model_dir, write_config
from tests.conftest import h3_home_env

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def setup(ingested_sample, default_model_dir, tmp_path_factory):
    base = tmp_path_factory.mktemp("kv-assets")
    model = tiny_model_dir(default_model_dir, base / "tiny")
    config = write_config(base / "h3_config.yaml", model)
    with h3_home_env(base / "h3") as home:
        copy_store(ingested_sample["home"], home)
        doc_ids = [d["doc_id"] for d in ingested_sample["report"]["documents"]
                   if d["status"] == "ok"]
        yield {"home": home, "config": config, "doc_ids": doc_ids}


def _run(assets, setup, doc_ids=None):
    instance = DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("documents", setup["doc_ids"])
    tags = {}
    if doc_ids:
        tags = {"dagster/asset_partition_range_start": doc_ids[0],
                "dagster/asset_partition_range_end": doc_ids[-1]}
    return materialize(assets, instance=instance, tags=tags, resources={
        "store": DocumentStoreResource(), "staging_io": JsonStagingIOManager(),
        "h3_runtime": H3RuntimeResource(config_file=str(setup["config"]))})


def test_kv_then_analysis_assets(setup):
    docs = setup["doc_ids"]
    old = setup["home"] / "kv" / "docs" / ("ab" * 16)  # KV stored by the first format
    old.mkdir(parents=True)
    (old / "meta.json").write_text('{"doc_id": "x", "format_version": 1}')
    result = _run([document_kv, document_summary, key_facts], setup, docs)
    assert result.success
    assert not old.exists()  # removed by document_kv (and its documents prefilled again)
    kv = result.output_for_node("document_kv")
    assert set(kv) == set(docs) and all(p["status"] == "ok" for p in kv.values())
    assert all(p["computed"] and p["tokens"] > 50 for p in kv.values())
    db = open_store()
    rows = db.rows("kv_blocks")
    assert {r["doc_id"] for r in rows} == set(docs)
    for doc_id, p in kv.items():
        mine = [r for r in rows if r["doc_id"] == doc_id]
        assert sum(r["token_end"] - r["token_start"] for r in mine) == p["tokens"]
    meta = result.asset_materializations_for_node("document_kv")[0].metadata
    assert meta["tokens"].value == sum(p["tokens"] for p in kv.values())
    assert meta["legacy_documents_removed"].value == 1

    summaries = result.output_for_node("document_summary")
    assert all(p["status"] == "ok" and p["kv_tokens_loaded_cold"] > 0 for p in summaries.values())
    assert all(p["integrity_errors"] == 0 for p in summaries.values())
    # drawn from every top section of the tree, not from the first pages
    assert all(p["section_coverage"] == 1.0 for p in summaries.values())
    # the model's text is stored only when it passed the check (the tiny random model's noise
    # rarely does); the check's verdict and the model's own text are kept beside it
    summary_rows = open_store().rows("analysis", "kind = 'summary'")
    for row in summary_rows:
        grounding = json.loads(row["extra_json"])["grounding"]
        assert set(grounding) >= {"model_text", "grounded", "unsupported_figures"}
        assert row["text"] == (grounding["model_text"] if grounding["grounded"] else "")
    assert all(p["grounded"] or not p["summary"] for p in summaries.values())
    facts = result.output_for_node("key_facts")
    report = next(d for d in docs if any(
        f["kind"] == "amount" and "48.7" in f["value"] for f in facts[d]["facts"]))
    pages = {r["page"] for r in db.rows("chunks", f"doc_id = '{report}'", ["page"])}
    assert all(f["page"] in pages for f in facts[report]["facts"])
    stored = db.rows("analysis", f"doc_id = '{report}'")
    assert {"summary", "note", "amount"} <= {r["kind"] for r in stored}

    again = _run([document_kv], setup, docs).output_for_node("document_kv")
    assert not any(p["computed"] for p in again.values())  # found in the cold tier: no prefill

    checks = _run([cross_document_checks], setup)
    assert checks.success
    with_facts = {r["doc_id"] for r in db.rows("analysis", "kind IN ('amount', 'date', 'party')")}
    assert checks.asset_materializations_for_node("cross_document_checks")[0].metadata[
        "documents"].value == len(with_facts) >= 1
