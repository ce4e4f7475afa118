"""Cold-tier KV reuse: a document's blocks stored once are found again (same process or a new
engine), verified, and generation from them equals recomputing everything."""

from __future__ import annotations

import pytest
import torch

from h3_runtime.engine import H3Engine
from h3_runtime.kvcache.checksum import IntegrityError
from h3_runtime.reuse.rope import shift_keys
from tests.h3_runtime.conftest import tiny_llama

CFG = {"runtime": {"block_tokens": 16}}


def test_prefix_from_cold_equals_recompute_and_survives_restart(tmp_path):
    model = tiny_llama(layers=2)
    doc = torch.randint(0, 128, (100,), generator=torch.Generator().manual_seed(7)).tolist()
    question = [5, 6, 7, 8, 9]
    engine = H3Engine(model=model, hbm_size_gb=0.01, cold_storage_path=tmp_path, config=CFG)
    ref = engine.generate(doc + question, max_new_tokens=10, return_ids=True)
    info = engine.store_prefix(doc)
    assert info["blocks_per_layer"] == 6 and info["files_written"] == 12
    restarted = H3Engine(model=model, hbm_size_gb=0.01, cold_storage_path=tmp_path, config=CFG)
    cache, n = restarted.cache_from_cold(doc + question)
    assert n == 96  # six whole blocks; the partial tail is recomputed
    out = restarted.generate(doc + question, max_new_tokens=10, cache=cache, return_ids=True)
    assert out == ref
    assert restarted.timings["prefill_tokens_computed"] == len(doc) + len(question) - 96
    # a different prefix does not match
    _, n_other = restarted.cache_from_cold([1] + doc[1:])
    assert n_other == 0


def test_corrupted_cold_block_is_detected_on_reuse(tmp_path):
    model = tiny_llama(layers=2)
    doc = list(range(20, 52))
    engine = H3Engine(model=model, hbm_size_gb=0.01, cold_storage_path=tmp_path, config=CFG)
    engine.store_prefix(doc)
    victim = sorted(tmp_path.glob("*/*.kvb"))[0]
    data = bytearray(victim.read_bytes())
    data[-3] ^= 0x10
    victim.write_bytes(bytes(data))
    with pytest.raises(IntegrityError):
        H3Engine(model=model, hbm_size_gb=0.01, cold_storage_path=tmp_path, config=CFG
                 ).cache_from_cold(doc)


def test_rope_shift_equals_keys_computed_at_the_later_position():
    model = tiny_llama(layers=1)
    rot = model.model.rotary_emb
    attn = model.model.layers[0].self_attn
    x = torch.randn(1, 8, model.config.hidden_size)
    raw = attn.k_proj(x).view(1, 8, -1, attn.head_dim).transpose(1, 2)  # (1, H_kv, 8, D)

    def rope_at(start: int) -> torch.Tensor:
        pos = torch.arange(start, start + 8)[None]
        cos, sin = rot(x, pos)
        from transformers.models.llama.modeling_llama import apply_rotary_pos_emb
        _, k = apply_rotary_pos_emb(raw, raw, cos, sin)
        return k

    with torch.no_grad():
        shifted = shift_keys(rope_at(10), 500, rot.inv_freq)
        torch.testing.assert_close(shifted, rope_at(510), atol=1e-4, rtol=1e-4)
