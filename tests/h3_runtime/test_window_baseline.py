"""The sinks + window baseline (`H3Engine(selection=False)`, StreamingLLM-like): while decoding
its window spans the decode buffer (the newest blocks before the ring fill the slots), so it
attends as many tokens as H3 does in the same hot bytes, and it stays within its budget."""

from __future__ import annotations

import pytest
import torch

from h3_runtime.engine import H3Engine
from tests.h3_runtime.conftest import kv_bytes_per_token, tiny_llama

MODEL = tiny_llama(layers=2)


def _window(budget_tokens: int, cold_dir) -> H3Engine:
    cfg = {"runtime": {"block_tokens": 16, "prefill_chunk_tokens": 64, "recent_tokens": 64}}
    return H3Engine(model=MODEL, hbm_size_gb=budget_tokens * kv_bytes_per_token(MODEL) / 2**30,
                    config=cfg, cold_storage_path=cold_dir, selection=False)


@pytest.mark.parametrize("new_tokens", [1, 40])
def test_decode_window_is_the_newest_blocks_then_the_ring(cold_dir, new_tokens):
    engine = _window(300, cold_dir)
    g = engine.geometry
    assert g.n_slots == 0 and g.decode_slots > 0  # prefill: all ring; decode: room for slots too
    ids = torch.randint(0, 128, (1, 900), generator=torch.Generator().manual_seed(3))
    engine.generate(ids, max_new_tokens=new_tokens)
    T = g.block_tokens
    for layer in engine.cache.layers:
        store = layer.store
        older = store.recent_start // T  # blocks before the ring
        newest = set(range(max(0, older - store.n_slots), older))
        assert len(newest) == store.n_slots  # 900 tokens fill the window
        for head in store.slots:  # the same contiguous window in every head
            assert set(head.slot_of) == newest
        live = (store.bias == 0).sum(1)  # (H_kv,) columns attended
        assert live.tolist() == [store.live_tokens + store.n_slots * T] * len(store.slots)
    s = engine.stats()
    assert s["hot_peak_bytes"] <= s["hot_budget_bytes"]


def test_window_attends_the_tokens_h3_attends_in_the_same_budget(cold_dir):
    window = _window(300, cold_dir)
    h3 = H3Engine(model=MODEL, hbm_size_gb=window.budget_bytes / 2**30,
                  config={"runtime": {"block_tokens": 16, "prefill_chunk_tokens": 64,
                                      "recent_tokens": 64}},
                  cold_storage_path=cold_dir)
    # (not more: the same decode bytes; not fewer than a block and the sinks short of it)
    gap = window.geometry.decode_layer_tokens - h3.geometry.decode_layer_tokens
    assert abs(gap) <= window.geometry.block_tokens + window.geometry.sink_tokens


@pytest.mark.parametrize("budget_tokens", [60, 150, 700])
def test_window_never_exceeds_its_budget(cold_dir, budget_tokens):
    engine = _window(budget_tokens, cold_dir)
    ids = torch.randint(0, 128, (1, 500), generator=torch.Generator().manual_seed(budget_tokens))
    out = engine.generate(ids, max_new_tokens=20, return_ids=True)
    s = engine.stats()
    assert len(out) == 20 and s["hot_peak_bytes"] <= s["hot_budget_bytes"]
