"""runtime.prefill_attention="exact": a chunked prefill through the tiers under a small hot
budget gives the last prompt token the same logits as full attention (DynamicCache), with the
hot peak within the budget; the sparse prefill does not (so the comparison can fail)."""

from __future__ import annotations

import pytest
import torch
from transformers import DynamicCache

from h3_runtime.config import ConfigError, RuntimeConfig
from h3_runtime.engine import H3Engine
from tests.h3_runtime.conftest import kv_bytes_per_token, tiny_llama

CFG = {"block_tokens": 16, "recent_tokens": 32, "prefill_chunk_tokens": 64}


def _last_logits(model, ids, cold_dir, mode: str) -> tuple[torch.Tensor, dict]:
    budget = kv_bytes_per_token(model) * 110  # ~18% of the 600-token KV
    engine = H3Engine(model=model, hbm_size_gb=budget / 2**30, cold_storage_path=cold_dir,
                      config={"runtime": {**CFG, "prefill_attention": mode}})
    cache = engine.new_cache(exact_allowed=False)  # every chunk goes through the tiers
    model.set_attn_implementation("h3")
    with torch.no_grad():
        out = engine._forward_chunks(engine._raw_forward(), cache, input_ids=ids)
    assert cache.sparse
    stats = engine.stats()
    engine.new_cache()
    return out.logits[0, -1], stats


def _exact_matches_dynamic_cache(model, ids: torch.Tensor, cold_dir, tol: float) -> torch.Tensor:
    """The exact prefill's last logits equal full attention's (DynamicCache) within `tol`,
    under a hot budget below the full KV; returns the reference logits."""
    model.set_attn_implementation("sdpa")
    with torch.no_grad():
        ref = model(ids, cache=DynamicCache(config=model.config)).logits[0, -1]
    exact, s = _last_logits(model, ids, cold_dir, "exact")
    assert s["hot_peak_bytes"] <= s["hot_budget_bytes"] < s["full_kv_bytes"]
    torch.testing.assert_close(exact, ref, atol=tol, rtol=tol)
    return ref


def test_exact_prefill_matches_dynamic_cache_under_small_budget(cold_dir):
    model = tiny_llama(layers=2)
    ids = torch.randint(0, 128, (1, 600), generator=torch.Generator().manual_seed(7))
    ref = _exact_matches_dynamic_cache(model, ids, cold_dir, 1e-4)
    sparse, s2 = _last_logits(model, ids, cold_dir, "sparse")
    assert s2["hot_peak_bytes"] <= s2["hot_budget_bytes"]
    assert (sparse - ref).abs().max() > 1e-3  # the sparse prefill really loses context here


def test_exact_prefill_then_decode_runs_within_budget(cold_dir):
    model = tiny_llama(layers=2)
    ids = torch.randint(0, 128, (1, 400), generator=torch.Generator().manual_seed(8))
    budget = kv_bytes_per_token(model) * 100
    engine = H3Engine(model=model, hbm_size_gb=budget / 2**30, cold_storage_path=cold_dir,
                      config={"runtime": {**CFG, "prefill_attention": "exact"}})
    out = engine.generate(ids, max_new_tokens=8, return_ids=True)
    s = engine.stats()
    assert len(out) == 8 and s["mode"] == "sparse"
    assert s["hot_peak_bytes"] <= s["hot_budget_bytes"]


def test_prefill_attention_is_validated():
    with pytest.raises(ConfigError, match="prefill_attention"):
        RuntimeConfig(prefill_attention="dense")


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_exact_prefill_on_cuda_matches_dynamic_cache(cold_dir):
    """The hot tier in GPU memory (CUDA keeps the hand-written log-sum-exp merge)."""
    model = tiny_llama(layers=2).to("cuda")
    ids = torch.randint(0, 128, (1, 600), generator=torch.Generator().manual_seed(7)).to("cuda")
    _exact_matches_dynamic_cache(model, ids, cold_dir, 1e-3)
