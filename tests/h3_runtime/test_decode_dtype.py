"""Decode keeps its hot KV in float16 for a float32 model (runtime.decode_kv_dtype): twice the
block slots in the same bytes, the budget still never exceeded, the prefill's buffers (and the
exact prefill's ring) back in the model's dtype, and `model` to opt out."""

from __future__ import annotations

import pytest
import torch

from h3_runtime.config import ConfigError, RuntimeConfig
from h3_runtime.engine import H3Engine
from h3_runtime.kvcache.block import decode_kv_dtype, to_hot
from h3_runtime.kvcache.geometry import decode_peak_bytes, plan_geometry
from tests.h3_runtime.conftest import kv_bytes_per_token, tiny_llama


def test_decode_dtype_is_the_setting_only_where_it_is_narrower():
    assert decode_kv_dtype(torch.float32, "float16") == torch.float16
    assert decode_kv_dtype(torch.float32, "model") == torch.float32
    assert decode_kv_dtype(torch.bfloat16, "float16") == torch.bfloat16  # saves nothing there
    with pytest.raises(ConfigError, match="decode_kv_dtype"):
        RuntimeConfig(decode_kv_dtype="int4")


def test_float16_saturates_instead_of_overflowing():
    x = torch.tensor([1e6, -1e6, 1.5])
    hot = to_hot(x, torch.float16)
    assert torch.isfinite(hot).all() and hot[2] == 1.5 and hot[0] == torch.finfo(torch.float16).max
    assert x[0] == 1e6  # the caller's tensor is untouched...
    scratch = x.clone()
    assert torch.equal(to_hot(scratch, torch.float16, scratch=True), hot)
    assert scratch[0] == torch.finfo(torch.float16).max  # ...unless it is scratch: clamped in place


@pytest.mark.parametrize("share", [0.01, 0.025, 0.05, 0.1, 0.2, 0.5])
def test_the_narrow_decode_geometry_fits_its_budget_and_holds_about_twice_the_tokens(share):
    rt, layers, b = RuntimeConfig(), 30, 2 * 3 * 64 * 4
    budget = int(8192 * b * layers * share)
    same = plan_geometry(budget, layers, b, rt)
    narrow = plan_geometry(budget, layers, b, rt, decode_bytes_per_token_layer=b // 2)
    assert (narrow.block_tokens, narrow.n_slots) == (same.block_tokens, same.n_slots)  # prefill
    assert narrow.hot_bytes(layers) <= budget
    # ~(n_layers + 1) / (n_layers / 2 + 2) = 1.94x the tokens per layer (the ring keeps its size,
    # the slots take the rest)
    assert narrow.decode_layer_tokens >= 1.8 * same.decode_layer_tokens
    # the largest: one more slot would not fit
    more = narrow.decode_layer_tokens + narrow.block_tokens
    assert decode_peak_bytes(more, layers, b, b // 2) > budget
    # a phase switch holds every layer's buffer of one phase or the other, never more
    assert layers * max(narrow.per_layer_tokens * b, narrow.decode_layer_tokens * b // 2) <= budget



@pytest.mark.parametrize("native", [False, True])
@pytest.mark.parametrize("share", [0.01, 0.05, 0.2])
def test_the_geometry_counts_the_bias_and_decode_attention_scratch(share, native):
    """The buffers' float32 bias (beta) and decode attention's transient bytes (sigma: the
    up-cast copy where the device has no float16 matmul) are inside the plan: it still fits,
    holds no more tokens than a plan that forgets them, and one more slot would not fit."""
    from h3_runtime.kvcache.sparse_attention import decode_scratch_bytes_per_token

    rt, layers, H, D = RuntimeConfig(), 30, 3, 64
    b, b_dec, beta = 2 * H * D * 4, 2 * H * D * 2, H * 4
    sigma = decode_scratch_bytes_per_token(3 * H, b, torch.float32, torch.float16, native)
    budget = int(8192 * b * layers * share)
    bare = plan_geometry(budget, layers, b, rt, decode_bytes_per_token_layer=b_dec)
    g = plan_geometry(budget, layers, b, rt, decode_bytes_per_token_layer=b_dec,
                      bias_bytes_per_token_layer=beta, decode_scratch_bytes_per_token=sigma)
    assert g.hot_bytes(layers) <= budget
    assert g.decode_layer_tokens <= bare.decode_layer_tokens
    more = g.decode_layer_tokens + g.block_tokens
    assert decode_peak_bytes(more, layers, b, b_dec, beta, sigma) > budget


def _run(model, cold_dir, dtype_setting: str):
    engine = H3Engine(model=model, hbm_size_gb=kv_bytes_per_token(model) * 100 / 2**30,
                      cold_storage_path=cold_dir,
                      config={"runtime": {"block_tokens": 16, "decode_kv_dtype": dtype_setting}})
    cache = engine.new_cache()
    ids = torch.randint(0, 128, (1, 400), generator=torch.Generator().manual_seed(5))
    out = engine.generate(ids, max_new_tokens=6, cache=cache, return_ids=True)
    return engine, cache, ids, out


def _live_bytes(cache) -> int:
    """Hot bytes holding live tokens: every layer's sinks + ring and its filled block slots."""
    return sum(layer.store.live_tokens * layer.store.token_bytes
               + sum(h.usage_bytes for h in layer.store.slots) for layer in cache.layers)


def test_decode_runs_in_float16_within_budget_and_prefill_returns_to_float32(cold_dir):
    model = tiny_llama(layers=6)  # (with 2 layers the up-cast copy would take what float16 saves)
    engine, cache, ids, out = _run(model, cold_dir, "float16")
    stores = [layer.store for layer in cache.layers]
    assert engine.stats()["mode"] == "sparse" and len(out) == 6
    # one wall time per decoding forward call (the decode bench's per-step breakdown)
    assert len(engine.decode_step_seconds) == engine.stats()["decode_tokens"] == len(out) - 1
    assert all(sec > 0 for sec in engine.decode_step_seconds)
    assert all(s.k.dtype == torch.float16 and s.n_slots == engine.geometry.decode_slots
               for s in stores)
    assert max(len(h.slot_of) for s in stores for h in s.slots) == engine.geometry.decode_slots
    assert 0 < cache.pool.peak_bytes <= cache.pool.budget_bytes
    assert cache.pool.occupied_bytes == _live_bytes(cache) > 0
    # a follow-up prompt: its chunks are prefilled with full-precision buffers again
    more = torch.cat([torch.tensor([cache.token_ids]), ids[:, :50]], 1)
    engine.generate(more, max_new_tokens=1, cache=cache)  # prefill only: no decode step
    assert all(s.k.dtype == torch.float32 and s.n_slots == engine.geometry.n_slots for s in stores)
    assert cache.pool.peak_bytes <= cache.pool.budget_bytes
    # pressure counts the bytes live tokens take in the buffers' dtype now (here: float32 again,
    # after decoding in float16)
    assert cache.pool.occupied_bytes == _live_bytes(cache) > 0

    # opting out: float32 buffers, fewer slots, and the first tokens the same here (a random
    # tiny model's logits are far apart; real-model retention: h3 bench --scenario ruler)
    engine32, cache32, _, out32 = _run(model, cold_dir, "model")
    assert all(layer.store.k.dtype == torch.float32 for layer in cache32.layers)
    assert cache32.layers[0].store.n_slots == engine32.geometry.decode_slots
    assert engine32.geometry.decode_slots < engine.geometry.decode_slots
    assert out32[:2] == out[:2]


@pytest.mark.parametrize("native", [False, True])
@pytest.mark.parametrize("groups", [1, 3])
def test_narrow_decode_attention_matches_sdpa_on_the_up_cast_buffer(groups, native):
    """Both batched-matmul paths for a float16 buffer compute what one sdpa call over its
    float32 copy computes (masked columns ignored, query heads reading their own KV head): the
    up-cast path to float32 rounding, the native float16 one to float16's (the query and the
    probabilities are rounded); what each allocates is accounted in the pool only while it
    lives, as much as the geometry plans for."""
    from h3_runtime.kvcache.hot import HotPool
    from h3_runtime.kvcache.sparse_attention import (
        _per_query_head,
        decode_attention,
        decode_scratch_bytes_per_token,
    )

    g = torch.Generator().manual_seed(groups)
    H, N, D = 2, 50, 16
    q = torch.randn(1, H * groups, 1, D, generator=g)
    k = torch.randn(H, N, D, generator=g).half()
    v = torch.randn(H, N, D, generator=g).half()
    bias = torch.zeros(H, N)
    bias[0, 10:30] = float("-inf")
    bias[1, :5] = float("-inf")
    pool = HotPool(10**6)
    out = decode_attention(q, k, v, bias, 0.25, pool, native)
    mask = _per_query_head(bias, H * groups)[None, :, None, :]
    ref = torch.nn.functional.scaled_dot_product_attention(
        q, k[None].float(), v[None].float(), attn_mask=mask, scale=0.25, enable_gqa=True)
    assert out.shape == (1, 1, H * groups, D) and out.dtype == torch.float32
    tol = {"rtol": 2e-3, "atol": 2e-3} if native else {"rtol": 1e-5, "atol": 1e-6}
    torch.testing.assert_close(out, ref.transpose(1, 2), **tol)
    assert not native or not torch.equal(out, ref.transpose(1, 2))  # it did run in float16
    planned = N * decode_scratch_bytes_per_token(H * groups, 2 * H * D * 4, torch.float32,
                                                 torch.float16, native)
    assert pool.used_bytes == 0 and pool.peak_bytes == planned
    assert planned >= (0 if native else H * N * D * 4)  # an up-cast copy (K's, then V's)
    k[0, 10:30] = 1e4  # masked columns cannot matter
    torch.testing.assert_close(decode_attention(q, k, v, bias, 0.25, pool, native), out)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_decode_on_cuda_attends_the_float16_buffer_natively(cold_dir):
    """On CUDA the hot buffers live in device memory and decode attends the float16 buffer in
    its own dtype (no up-cast copy; the CPU keeps the up-cast path): the budget holds."""
    engine, cache, _, out = _run(tiny_llama(layers=6).to("cuda"), cold_dir, "float16")
    assert engine.decode_native_matmul and engine.stats()["mode"] == "sparse" and len(out) == 6
    assert all(layer.store.k.is_cuda and layer.store.k.dtype == torch.float16
               for layer in cache.layers)
    assert 0 < cache.pool.peak_bytes <= cache.pool.budget_bytes
    assert cache.pool.by_purpose.get("decode attention", 0) == 0  # released after each layer


def test_the_cpu_attends_natively_only_a_bfloat16_buffer_with_bfloat16_kernels(monkeypatch):
    """float16 on a CPU goes through the up-cast copy; bfloat16 is attended in place exactly
    where oneDNN says the CPU has bfloat16 instructions; CUDA attends either natively."""
    from h3_runtime.kvcache import sparse_attention
    from h3_runtime.kvcache.sparse_attention import native_narrow_matmul

    cpu = torch.device("cpu")
    assert not native_narrow_matmul(cpu) and not native_narrow_matmul(cpu, torch.float16)
    assert native_narrow_matmul(torch.device("cuda"))
    assert native_narrow_matmul(torch.device("cuda"), torch.bfloat16)
    for has in (False, True):
        monkeypatch.setattr(sparse_attention, "cpu_has_native_bfloat16", lambda has=has: has)
        assert native_narrow_matmul(cpu, torch.bfloat16) is has
        assert not native_narrow_matmul(cpu, torch.float16)


def test_bfloat16_decode_attends_natively_exactly_where_the_cpu_can_and_holds_its_budget(cold_dir):
    """decode_kv_dtype bfloat16 on this CPU: attended in place where oneDNN has bfloat16
    kernels (no up-cast copy planned or made), through the up-cast copy elsewhere; either way
    the buffers are bfloat16 and the budget holds."""
    from h3_runtime.kvcache.sparse_attention import cpu_has_native_bfloat16

    engine, cache, _, out = _run(tiny_llama(layers=6), cold_dir, "bfloat16")
    assert engine.decode_native_matmul is cpu_has_native_bfloat16()
    assert engine.stats()["mode"] == "sparse" and len(out) == 6
    assert all(layer.store.k.dtype == torch.bfloat16 for layer in cache.layers)
    assert 0 < cache.pool.peak_bytes <= cache.pool.budget_bytes
    assert cache.pool.by_purpose.get("decode attention", 0) == 0  # released after each layer


def test_native_bfloat16_decode_attention_matches_sdpa():
    """The native path with a bfloat16 buffer (what a CPU with bfloat16 kernels runs) computes
    sdpa's attention over the buffer's float32 copy to bfloat16's rounding, masked columns
    ignored; whether or not this CPU has the kernels, the arithmetic is the same."""
    from h3_runtime.kvcache.hot import HotPool
    from h3_runtime.kvcache.sparse_attention import _per_query_head, decode_attention

    g = torch.Generator().manual_seed(7)
    H, groups, N, D = 3, 3, 200, 64
    q = torch.randn(1, H * groups, 1, D, generator=g)
    k = torch.randn(H, N, D, generator=g).bfloat16()
    v = torch.randn(H, N, D, generator=g).bfloat16()
    bias = torch.zeros(H, N)
    bias[1, 50:120] = float("-inf")
    out = decode_attention(q, k, v, bias, 0.125, HotPool(10**7), native=True)
    mask = _per_query_head(bias, H * groups)[None, :, None, :]
    ref = torch.nn.functional.scaled_dot_product_attention(
        q, k[None].float(), v[None].float(), attn_mask=mask, scale=0.125, enable_gqa=True)
    assert out.dtype == torch.float32
    torch.testing.assert_close(out, ref.transpose(1, 2), rtol=2e-2, atol=2e-2)
    assert not torch.equal(out, ref.transpose(1, 2))  # it did run in bfloat16
