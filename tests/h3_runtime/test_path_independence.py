"""Under a hot budget far below the document's KV, the same question gives the same tokens
whether the document's KV is recomputed or loaded from the cold tier (the real default model):
decode's selection starts afresh after every prefill, from the KV and the prompt only."""

from __future__ import annotations

import pytest
from transformers import AutoModelForCausalLM, AutoTokenizer

from benchmarks.evals.ruler_tasks import passkey
from h3_runtime.engine import H3Engine
from h3_runtime.reuse.assemble import CachedSpan, Segment
from h3_runtime.reuse.doc_kv import DocumentKV, precompute_document
from h3_runtime.reuse.runtime import ReuseRuntime

pytestmark = pytest.mark.slow


def test_cold_hit_and_recompute_give_the_same_tokens(default_model_dir, tmp_path):
    tok = AutoTokenizer.from_pretrained(default_model_dir)
    model = AutoModelForCausalLM.from_pretrained(default_model_dir).eval()
    ids = passkey(tok, 1024, 0.4, seed=3).ids
    doc = ids[:-20]  # the document; the question and the answer prefix follow
    full_kv = len(ids) * 2 * 30 * 3 * 64 * 4
    budget = 0.1 * full_kv / 2**30

    def engine() -> H3Engine:
        return H3Engine(model=model, tokenizer=tok, hbm_size_gb=budget, hbf_size_gb=1.0,
                        cold_storage_path=tmp_path / "kv")

    recompute = engine()
    ref = recompute.generate(ids, max_new_tokens=24, return_ids=True)
    assert recompute.cache.sparse  # the budget forced the tiers: selection decided the decode
    store = DocumentKV(recompute.cold, tmp_path / "kv" / "docs")
    index, _ = precompute_document(model, store, doc_id="doc", token_ids=doc,
                                   model_key=recompute.fingerprint)

    loader = engine()  # a new engine and store over the same folder: a restart
    model.set_attn_implementation("h3")
    runtime = ReuseRuntime(model, tok, DocumentKV(loader.cold, tmp_path / "kv" / "docs"),
                           cache_factory=loader.new_cache, cache_stats=loader.cache_stats)
    assert runtime.store.find("doc", runtime.model_key).key == index.key
    out = runtime.answer([Segment(tuple(doc), CachedSpan(index.key, 0)),
                          Segment(tuple(ids[len(doc):]))], max_new_tokens=24)
    assert out.stats["kv_tokens_loaded_cold"] == len(doc)  # the document came from cold
    assert out.stats["kv_mode"] == "sparse"
    assert out.token_ids == ref
