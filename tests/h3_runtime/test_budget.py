"""The hot budget is never exceeded, whatever the budget and the prompt length; a 64K-token
prompt runs through a tiny Llama with a hot budget <= 5% of its full KV."""

from __future__ import annotations

import time

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from h3_runtime.engine import H3Engine
from h3_runtime.kvcache.geometry import BudgetTooSmallError
from h3_runtime.kvcache.tiered_attention import WARM_HEADROOM_TOKENS
from tests.h3_runtime.conftest import kv_bytes_per_token, tiny_llama

MODEL = tiny_llama(layers=2)


@settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
@given(budget_tokens=st.integers(40, 2000), prompt_len=st.integers(1, 700),
       block=st.sampled_from([8, 16, 32]), chunk=st.sampled_from([16, 64, 512]),
       new_tokens=st.integers(1, 6))
def test_hot_peak_never_exceeds_budget(tmp_path_factory, budget_tokens, prompt_len, block, chunk,
                                       new_tokens):
    budget = budget_tokens * kv_bytes_per_token(MODEL)
    cfg = {"runtime": {"block_tokens": block, "prefill_chunk_tokens": chunk, "recent_tokens": 64}}
    try:
        engine = H3Engine(model=MODEL, hbm_size_gb=budget / 2**30, config=cfg,
                          cold_storage_path=tmp_path_factory.mktemp("kv"))
    except BudgetTooSmallError:
        return  # refused up front with a clear error: nothing can exceed
    ids = torch.randint(0, 128, (1, prompt_len), generator=torch.Generator().manual_seed(prompt_len))
    out = engine.generate(ids, max_new_tokens=new_tokens, return_ids=True)
    s = engine.stats()
    assert len(out) == new_tokens
    assert s["hot_peak_bytes"] <= s["hot_budget_bytes"] == int(budget / 2**30 * 2**30)
    assert s["tokens"] == prompt_len + new_tokens - 1


def test_budget_too_small_is_a_clear_error(tmp_path):
    with pytest.raises(BudgetTooSmallError, match="hbm_size_gb"):
        H3Engine(model=MODEL, hbm_size_gb=1e-9, cold_storage_path=tmp_path)


@pytest.mark.slow
def test_64k_prompt_with_hot_budget_under_5_percent(tmp_path):
    n = 65_536
    full = n * kv_bytes_per_token(MODEL)
    budget = int(full * 0.05)
    cfg = {"runtime": {"block_tokens": 64, "prefill_chunk_tokens": 512, "recent_tokens": 256}}
    engine = H3Engine(model=MODEL, hbm_size_gb=budget / 2**30, config=cfg,
                      cold_storage_path=tmp_path / "kv")
    ids = torch.randint(0, 128, (1, n), generator=torch.Generator().manual_seed(0))
    t0 = time.perf_counter()
    out = engine.generate(ids, max_new_tokens=8, return_ids=True)
    s = engine.stats()
    print(f"64K prompt: {time.perf_counter() - t0:.1f} s, hot peak {s['hot_peak_bytes']} B of "
          f"budget {s['hot_budget_bytes']} B, full KV {s['full_kv_bytes']} B")
    assert len(out) == 8 and s["tokens"] == n + 7
    assert s["hot_peak_bytes"] <= s["hot_budget_bytes"] <= 0.05 * s["full_kv_bytes"]
    assert s["warm_bytes"] + s["cold_bytes"] >= 0.9 * full  # the rest lives in warm / cold


@pytest.mark.parametrize("watermark, expect_cold", [(0.5, False), (0.0, True)])
def test_cold_demotion_waits_for_warm_pressure(tmp_path, watermark, expect_cold):
    """Cold-eligible blocks (heat < cold_threshold) go to disk only once the warm tier is fuller
    than scheduler.warm_watermark: with host memory to spare they stay warm (no disk round trip)."""
    n = 2048
    budget = int(n * kv_bytes_per_token(MODEL) * 0.2)
    cfg = {"runtime": {"block_tokens": 16, "prefill_chunk_tokens": 128, "recent_tokens": 32},
           "scheduler": {"cold_threshold": 0.6, "hbf_threshold": 0.7, "warm_watermark": watermark}}
    engine = H3Engine(model=MODEL, hbm_size_gb=budget / 2**30, hbf_size_gb=1.0, config=cfg,
                      cold_storage_path=tmp_path / "kv")
    ids = torch.randint(0, 128, (1, n), generator=torch.Generator().manual_seed(1))
    engine.generate(ids, max_new_tokens=8)
    s = engine.stats()
    assert (s["cold_bytes"] > 0) is expect_cold
    assert s["warm_bytes"] + s["cold_bytes"] >= n * kv_bytes_per_token(MODEL)  # every block kept


def test_warm_reserves_at_most_its_capacity_when_the_document_spills(tmp_path):
    """A document larger than the warm tier: each layer's arena reserves its share of the warm
    capacity, not room for all its blocks (rows never used cost no memory on a CPU, but pinned
    memory on a GPU machine is physical), and the blocks past it go to cold."""
    n = 2048
    full = n * kv_bytes_per_token(MODEL)
    cfg = {"runtime": {"block_tokens": 16, "prefill_chunk_tokens": 256, "recent_tokens": 32}}
    engine = H3Engine(model=MODEL, hbm_size_gb=full * 0.1 / 2**30, hbf_size_gb=full * 0.3 / 2**30,
                      config=cfg, cold_storage_path=tmp_path / "kv")
    ids = torch.randint(0, 128, (1, n), generator=torch.Generator().manual_seed(2))
    engine.generate(ids, max_new_tokens=4)
    s = engine.stats()
    assert s["cold_bytes"] > 0 and s["warm_bytes"] <= 0.3 * full
    assert s["warm_bytes"] <= s["warm_reserved_bytes"] <= 0.3 * full + 1
    assert s["warm_bytes"] + s["cold_bytes"] >= 0.9 * full


def test_prefill_reserves_its_blocks_rows_once_so_decode_never_grows_the_arenas(tmp_path):
    """The prefill announces its token count: each layer's warm arena is allocated once with room
    for every prompt block plus decode's headroom, so no decoded token waits on an arena copy."""
    n = 1024
    full = n * kv_bytes_per_token(MODEL)
    cfg = {"runtime": {"block_tokens": 16, "prefill_chunk_tokens": 128, "recent_tokens": 32}}
    engine = H3Engine(model=MODEL, hbm_size_gb=full * 0.1 / 2**30, config=cfg,
                      cold_storage_path=tmp_path / "kv")
    ids = torch.randint(0, 128, (1, n), generator=torch.Generator().manual_seed(3))
    engine.generate(ids, max_new_tokens=41)  # 40 decoded tokens: two more complete blocks
    s = engine.stats()
    T = engine.geometry.block_tokens  # (the budget may halve the configured 16)
    block_bytes = T * kv_bytes_per_token(MODEL) // 2  # one layer's block (2 layers)
    rows = (n + WARM_HEADROOM_TOKENS) // T
    assert s["warm_bytes"] == 2 * ((n + 40) // T) * block_bytes
    assert s["warm_reserved_bytes"] == 2 * rows * block_bytes  # the announced rows, no growth


def test_exact_decode_writes_new_tokens_in_place(tmp_path):
    """While the whole KV fits, a decoded token is written into spare room of the layer's buffer
    (no copy of the whole KV per token, as torch.cat would make), and the hot pool accounts for
    the buffer's full size."""
    engine = H3Engine(model=MODEL, hbm_size_gb=1e-3, cold_storage_path=tmp_path)
    cache = engine.new_cache()
    ids = torch.randint(0, 128, (1, 40), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        MODEL(ids, past_key_values=cache, use_cache=True)
        layer = cache.layers[0]
        buffer, capacity = layer.key_buffer.data_ptr(), layer.key_buffer.shape[-2]
        assert capacity > 40  # spare room taken while the budget allows it
        for step in range(capacity - 40):
            MODEL(torch.tensor([[step]]), past_key_values=cache, use_cache=True)
        assert layer.key_buffer.data_ptr() == buffer and layer.keys.shape[-2] == capacity
        assert cache.pool.used_bytes >= sum(lay.exact_bytes for lay in cache.layers)
        MODEL(torch.tensor([[1]]), past_key_values=cache, use_cache=True)  # full: it grows
    assert layer.key_buffer.data_ptr() != buffer and layer.keys.shape[-2] == capacity + 1
    assert not cache.sparse and cache.pool.peak_bytes <= cache.pool.budget_bytes
    cache.release()
    assert cache.pool.used_bytes == 0 and cache.pool.occupied_bytes == 0


@pytest.mark.parametrize("announced", [True, False])
def test_a_prompt_loaded_in_pieces_reserves_its_warm_rows_once_when_announced(tmp_path, announced):
    """Reuse builds a prompt from many loaded spans (a navigated branch: ~25); told the prompt's
    length first (`expect_tokens`), each layer's warm arena is reserved for all of it with the
    first piece, not grown (and copied) piece after piece."""
    n, pieces = 1024, 8
    full = n * kv_bytes_per_token(MODEL)
    cfg = {"runtime": {"block_tokens": 16, "prefill_chunk_tokens": 128, "recent_tokens": 32}}
    engine = H3Engine(model=MODEL, hbm_size_gb=full * 0.1 / 2**30, config=cfg,
                      cold_storage_path=tmp_path / "kv")
    c = MODEL.config
    D = c.hidden_size // c.num_attention_heads
    g = torch.Generator().manual_seed(4)
    keys = torch.randn(c.num_hidden_layers, c.num_key_value_heads, n, D, generator=g)
    values = torch.randn(c.num_hidden_layers, c.num_key_value_heads, n, D, generator=g)
    cache = engine.new_cache()
    if announced:
        cache.expect_tokens(n)
    step, reserved = n // pieces, []
    for a in range(0, n, step):
        cache.append_kv(keys[:, :, a:a + step], values[:, :, a:a + step], list(range(a, a + step)))
        reserved.append(engine.stats()["warm_reserved_bytes"])
    assert cache.sparse
    grew = sum(b > a for a, b in zip(reserved, reserved[1:], strict=False))
    assert (grew == 0) if announced else (grew > 0)
    cache.release()
