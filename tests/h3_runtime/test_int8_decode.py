"""Decode's hot KV in int8 (runtime.decode_kv_dtype: int8, kvcache/hot_codec.py): a scale per
head and token, ~1.9x float16's tokens in the same hot bytes, the budget still never exceeded,
attention equal to attention over the de-quantised buffer, and the prefill's buffers back in
the model's dtype."""

from __future__ import annotations

import pytest
import torch

from h3_runtime.config import RuntimeConfig
from h3_runtime.kvcache import hot_codec
from h3_runtime.kvcache.block import decode_kv_dtype
from h3_runtime.kvcache.geometry import plan_geometry
from h3_runtime.kvcache.hot import HotPool
from h3_runtime.kvcache.sparse_attention import (
    _per_query_head,
    decode_attention,
    decode_scratch_bytes_per_token,
)
from h3_runtime.kvcache.tiers import LayerSlots
from tests.h3_runtime.conftest import tiny_llama
from tests.h3_runtime.test_decode_dtype import _live_bytes, _run


def test_quantise_rounds_each_vector_against_its_own_maximum():
    x = torch.randn(3, 20, 16, generator=torch.Generator().manual_seed(0)) * torch.tensor([1e-3, 1.0, 50.0])[:, None, None]
    x[1, 4] = 0.0  # an all-zero vector
    q, scale = hot_codec.quantise(x)
    assert q.dtype == torch.int8 and scale.shape == (3, 20) and q.abs().max() == 127
    owned = x.clone()
    q_in_place, _ = hot_codec.quantise(owned, scratch=True)  # a scratch input is divided in place
    assert torch.equal(q_in_place, q) and not torch.equal(owned, x)
    back = q.float() * scale[..., None]
    assert ((back - x).abs() <= scale[..., None] / 2 + 1e-7).all()  # half a step at most
    assert torch.equal(back[1, 4], torch.zeros(16)) and scale[1, 4] > 0
    # write / read through an index address the values and their scales together
    buf = torch.zeros(3, 30, 16, dtype=torch.int8)
    scales = hot_codec.new_scales(buf)
    idx = (slice(None), torch.tensor([29, 3, 7]))
    hot_codec.write(buf, scales, idx, x[:, :3])
    torch.testing.assert_close(hot_codec.read(buf, scales, idx, torch.float32), back[:, :3])
    assert hot_codec.new_scales(torch.zeros(2, 4, dtype=torch.float16)) is None
    # K and V together (a decoded token's column: quantised in one go) = each on its own
    k2, v2 = torch.zeros_like(buf), torch.zeros_like(buf)
    s2 = (hot_codec.new_scales(k2), hot_codec.new_scales(v2))
    col = (slice(None), 11)
    hot_codec.write_kv(k2, v2, s2, col, x[:, 0], 2 * x[:, 1])
    for dst, sc, src in ((k2, s2[0], x[:, 0]), (v2, s2[1], 2 * x[:, 1])):
        want_q, want_s = hot_codec.quantise(src)
        assert torch.equal(dst[col], want_q) and torch.equal(sc[col], want_s)


def test_int8_holds_about_1_9x_float16s_tokens_within_the_budget():
    assert decode_kv_dtype(torch.float32, "int8") == decode_kv_dtype(torch.bfloat16, "int8") == torch.int8
    rt, layers, H, D = RuntimeConfig(), 30, 3, 64
    b = 2 * H * D * 4
    for share in (0.025, 0.1):
        budget = int(8192 * b * layers * share)
        plans = {}
        for dtype in (torch.float16, torch.int8):
            plans[dtype] = plan_geometry(
                budget, layers, b, rt,
                decode_bytes_per_token_layer=hot_codec.hot_bytes_per_token_layer(H, D, dtype),
                bias_bytes_per_token_layer=H * 4,
                decode_scratch_bytes_per_token=decode_scratch_bytes_per_token(
                    3 * H, b, torch.float32, dtype, False))
            assert plans[dtype].hot_bytes(layers) <= budget
        ratio = plans[torch.int8].decode_layer_tokens / plans[torch.float16].decode_layer_tokens
        assert 1.6 < ratio < 2.0


@pytest.mark.parametrize("groups", [1, 3])
def test_int8_decode_attention_is_attention_over_the_de_quantised_buffer(groups):
    g = torch.Generator().manual_seed(groups)
    H, N, D = 2, 50, 16
    q = torch.randn(1, H * groups, 1, D, generator=g)
    k8, ks = hot_codec.quantise(torch.randn(H, N, D, generator=g) * 3)
    v8, vs = hot_codec.quantise(torch.randn(H, N, D, generator=g))
    bias = torch.zeros(H, N)
    bias[0, 10:30] = float("-inf")
    pool = HotPool(10**6)
    out = decode_attention(q, k8, v8, bias, 0.25, pool, False, ks, vs)
    k, v = k8.float() * ks[..., None], v8.float() * vs[..., None]
    ref = torch.nn.functional.scaled_dot_product_attention(
        q, k[None], v[None], attn_mask=_per_query_head(bias, H * groups)[None, :, None, :],
        scale=0.25, enable_gqa=True)
    torch.testing.assert_close(out, ref.transpose(1, 2), rtol=1e-5, atol=1e-6)
    planned = N * decode_scratch_bytes_per_token(H * groups, 2 * H * D * 4, torch.float32,
                                                 torch.int8, False)
    assert pool.used_bytes == 0 and pool.peak_bytes == planned
    # one float32 copy (K's, then V's in the same scratch), scores, probabilities, key scales:
    # never K's and V's copies at once
    assert planned == N * (H * D * 4 + H * groups * (2 * 4 + 4))


def test_layer_slots_store_int8_blocks_with_their_scales():
    H, n, T, D = 3, 4, 8, 16
    k = torch.zeros(H, n * T, D, dtype=torch.int8)
    v = torch.zeros_like(k)
    ks, vs = hot_codec.new_scales(k), hot_codec.new_scales(v)
    pool = HotPool(10**6)
    slots = LayerSlots(k, v, torch.full((H, n * T), float("-inf")), T, pool, scales=(ks, vs))
    from h3_runtime.kvcache.block import KVBlock

    gen = torch.Generator().manual_seed(1)
    blocks = {b: KVBlock(torch.randn(H, T, D, generator=gen), torch.randn(H, T, D, generator=gen), b)
              for b in (5, 9)}
    slots.store([[5], [5, 9], []], blocks)
    assert slots[0].block_bytes == T * (2 * D + 8)  # int8 K and V plus two float32 scales
    for h, b in ((0, 5), (1, 5), (1, 9)):
        held = slots[h].load(b)  # de-quantised copies
        step = ks.view(H, n, T)[h, slots[h].slot_of[b]][None, :, None]
        assert ((held.keys - blocks[b].keys[h : h + 1]).abs() <= step / 2 + 1e-6).all()
    assert pool.occupied_bytes == 3 * slots[0].block_bytes


def test_decode_runs_in_int8_within_budget_and_prefill_returns_to_float32(cold_dir):
    model = tiny_llama(layers=6)
    engine, cache, ids, out = _run(model, cold_dir, "int8")
    stores = [layer.store for layer in cache.layers]
    assert engine.stats()["mode"] == "sparse" and len(out) == 6
    assert all(s.k.dtype == torch.int8 and s.ks is not None for s in stores)
    engine16, _, _, out16 = _run(model, cold_dir, "float16")
    assert engine.geometry.decode_slots > engine16.geometry.decode_slots
    assert max(len(h.slot_of) for s in stores for h in s.slots) == engine.geometry.decode_slots
    assert 0 < cache.pool.peak_bytes <= cache.pool.budget_bytes
    assert cache.pool.occupied_bytes == _live_bytes(cache) > 0
    assert out[0] == out16[0]  # the first token comes from the prefill (float32 either way)
    more = torch.cat([torch.tensor([cache.token_ids]), ids[:, :50]], 1)
    engine.generate(more, max_new_tokens=1, cache=cache)
    assert all(s.k.dtype == torch.float32 and s.ks is None for s in stores)
    assert cache.pool.peak_bytes <= cache.pool.budget_bytes
    assert cache.pool.occupied_bytes == _live_bytes(cache) > 0
