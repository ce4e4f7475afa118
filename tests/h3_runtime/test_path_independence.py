"""Under a hot budget far below the document's KV, the same question gives the same tokens
whether the document's KV is recomputed or loaded from the cold tier (the real default model):
decode's selection starts afresh after every prefill, from the KV and the prompt only."""

from __future__ import annotations

import pytest
from transformers import AutoModelForCausalLM, AutoTokenizer

from h3_runtime.engine import H3Engine
from h3_runtime.evals.ruler_tasks import passkey

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
    recompute.store_prefix(doc)

    loader = engine()
    cache, loaded = loader.cache_from_cold(ids)
    assert loaded == len(doc) // loader.geometry.block_tokens * loader.geometry.block_tokens
    out = loader.generate(ids, max_new_tokens=24, cache=cache, return_ids=True)
    assert loader.stats()["bytes_moved"].get("cold->warm", 0) > 0  # the document came from cold
    assert out == ref
