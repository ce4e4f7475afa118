"""Decode reuses a layer's hot-block choice while its query barely moves (kvcache/reselect_gate.py,
runtime.decode_reselect_cosine / decode_reselect_max_tokens): the threshold decides how many
steps re-select, the safety bound caps a choice's age, blocks leaving the ring meanwhile join the
slots, and with the gate off the output is the old every-N path's token for token."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import yaml

from h3_runtime.config import ConfigError, RuntimeConfig
from h3_runtime.engine import H3Engine
from h3_runtime.kvcache import tiered_attention
from h3_runtime.kvcache.reselect_gate import ReselectGate
from h3_runtime.kvcache.summaries import BlockSummaries
from tests.h3_runtime.conftest import kv_bytes_per_token, tiny_llama

REPO = Path(__file__).resolve().parents[2]


def _q(vectors: list[list[float]]) -> torch.Tensor:
    """(1, Hq, 1, D) from one D-vector per query head."""
    return torch.tensor(vectors, dtype=torch.float32)[None, :, None, :]


def test_the_gate_reuses_a_choice_until_the_query_moves_or_the_bound_is_reached():
    # 2 KV heads, 2 query heads each; the gate looks at each KV head's mean query
    still = _q([[1, 0], [1, 0.2], [0, 1], [0.1, 1]])
    tilted = _q([[1, 0.1], [1, 0.3], [0, 1], [0.1, 1]])  # cosines ~0.99
    turned = _q([[1, 0], [1, 0.2], [1, 0], [1, 0.1]])  # KV head 1's query turned ~90 degrees
    gate = ReselectGate(every=1, cosine=0.9, max_tokens=4)
    decisions = []
    for q in (still, tilted, still, turned, still, still, still, still, still):
        due = gate.due(q, 2)
        if due:
            gate.selected(q, 2)
        decisions.append(due)
    # the first step selects; a tilt is reuse; a turn re-selects; then the bound (4 tokens)
    assert decisions == [True, False, False, True, True, False, False, False, True]
    # 1.0: no gate, every considered step re-selects (every 2 tokens here)
    off = ReselectGate(every=2, cosine=1.0, max_tokens=4)
    assert not off.enabled
    assert [off.due(still, 2) for _ in range(5)] == [True, False, True, False, True]
    gate.reset()
    assert gate.due(still, 2)  # after a prefill: afresh


def test_the_gate_names_the_heads_whose_query_moved_and_only_they_take_a_new_reference():
    still = _q([[1, 0], [1, 0.2], [0, 1], [0.1, 1]])
    turned = _q([[1, 0], [1, 0.2], [1, 0], [1, 0.1]])  # KV head 1's query turned, head 0's not
    gate = ReselectGate(every=1, cosine=0.9, max_tokens=3)
    assert gate.due(still, 2) and gate.moved_heads() is None  # the first selection: every head
    gate.selected(still, 2)
    assert gate.due(turned, 2) and gate.moved_heads() == [1]
    gate.selected(turned, 2, [1])
    assert not gate.due(turned, 2)  # head 1's reference is the turned query now, head 0's kept
    # the safety bound counts from the last selection of every head (a head that never moves
    # is ranked again then), and then every head re-selects
    assert gate.due(turned, 2) and gate.moved_heads() is None


def test_runtime_keys_are_validated_and_the_shipped_file_sets_them():
    rt = RuntimeConfig(decode_reselect_cosine=0.5, decode_reselect_max_tokens=8)
    assert (rt.decode_reselect_cosine, rt.decode_reselect_max_tokens) == (0.5, 8)
    for bad in ({"decode_reselect_cosine": 1.5}, {"decode_reselect_cosine": -0.1},
                {"decode_reselect_cosine": "0.9"}, {"decode_reselect_max_tokens": 0}):
        with pytest.raises(ConfigError, match="runtime.decode_reselect"):
            RuntimeConfig(**bad)
    shipped = yaml.safe_load((REPO / "h3_config.yaml").read_text())["runtime"]
    defaults = RuntimeConfig()
    for key in ("decode_reselect_every", "decode_reselect_cosine", "decode_reselect_max_tokens"):
        assert shipped[key] == getattr(defaults, key), key


def _engine(model, cold_dir, **runtime) -> H3Engine:
    return H3Engine(model=model, hbm_size_gb=kv_bytes_per_token(model) * 100 / 2**30,
                    cold_storage_path=cold_dir, config={"runtime": {"block_tokens": 16, **runtime}})


def _ids(n: int, seed: int) -> torch.Tensor:
    return torch.randint(0, 128, (1, n), generator=torch.Generator().manual_seed(seed))


def test_the_threshold_decides_how_many_steps_re_select(cold_dir):
    model = tiny_llama(layers=2)
    ids = _ids(400, 3)
    counts, outs = {}, {}
    for cosine, max_tokens in ((1.0, 64), (0.0, 64), (0.0, 1)):
        engine = _engine(model, cold_dir, decode_reselect_cosine=cosine,
                         decode_reselect_max_tokens=max_tokens)
        outs[cosine, max_tokens] = engine.generate(ids, max_new_tokens=20, return_ids=True)
        stores = [layer.store for layer in engine.cache.layers]
        log = engine.cache.ctx.reselect_log
        assert len(log) == 19  # one entry per decode forward (the first token is the prefill's)
        assert sum(log) == sum(s.reselections for s in stores)  # the counter the bench reads
        counts[cosine, max_tokens] = [s.reselections for s in stores]
        assert engine.cache.pool.peak_bytes <= engine.cache.pool.budget_bytes
    assert counts[1.0, 64] == [19, 19]  # no gate: every step, every layer
    assert counts[0.0, 1] == [19, 19]  # the safety bound: a choice serves one token
    reuse = counts[0.0, 64]
    assert all(1 <= c < 19 for c in reuse)  # the first step, then only where a query turned
    assert outs[0.0, 1] == outs[1.0, 64]  # re-selecting every step either way: the same tokens


def _old_decode(self, q, kn, vn, scaling):
    """`TieredLayerAttention._decode` before the gate (re-select every reselect_every tokens)."""
    if self.after_prefill:
        self._reset_selection()
        self.after_prefill = False
    self.commit(kn, vn)
    n_cand = self.recent_start // self.g.block_tokens
    due = self.decode_steps % self.ctx.reselect_every == 0
    self.decode_steps += 1
    if due and self.ctx.selection and n_cand and self.n_slots:
        self._select(q, n_cand, scaling)
    elif not self.ctx.selection and n_cand and self.n_slots:
        self._keep_newest(n_cand)
    return tiered_attention.decode_attention(q, self.k, self.v, self.bias, scaling, self.ctx.pool,
                                             self.ctx.decode_native_matmul, self.ks, self.vs)


@pytest.mark.parametrize("every", [1, 3])
def test_with_the_gate_off_greedy_output_is_the_old_paths(cold_dir, monkeypatch, every):
    model = tiny_llama(layers=2, seed=1)
    ids = _ids(500, 4)
    new = _engine(model, cold_dir, decode_reselect_every=every, decode_reselect_cosine=1.0)
    got = new.generate(ids, max_new_tokens=24, return_ids=True)
    assert sum(new.cache.ctx.reselect_log) == 2 * len(range(0, 23, every))
    monkeypatch.setattr(tiered_attention.TieredLayerAttention, "_decode", _old_decode)
    old = _engine(model, cold_dir, decode_reselect_every=every)
    assert old.generate(ids, max_new_tokens=24, return_ids=True) == got


def test_a_block_leaving_the_ring_joins_the_slots_while_the_choice_is_reused(cold_dir, monkeypatch):
    model = tiny_llama(layers=1)
    engine = _engine(model, cold_dir, decode_reselect_cosine=0.0, decode_reselect_max_tokens=1000)
    # the query never counts as moved after the first step: only the hand-over changes the slots
    monkeypatch.setattr(ReselectGate, "due", lambda self, q, h: self.ref is None)
    ranked: list[int] = []  # the candidate blocks of each decode selection
    select = tiered_attention.TieredLayerAttention._select

    def counting(self, q, n, scaling, heads=None):
        if q.shape[2] == 1:
            ranked.append(n)
        return select(self, q, n, scaling, heads)

    monkeypatch.setattr(tiered_attention.TieredLayerAttention, "_select", counting)
    cache = engine.new_cache()
    engine.generate(_ids(400, 5), max_new_tokens=40, cache=cache, return_ids=True)
    store = cache.layers[0].store
    n_cand = store.recent_start // engine.geometry.block_tokens
    assert store.reselections == len(ranked) == 1 and store.selected_blocks == n_cand
    handed = range(ranked[0], n_cand)
    assert len(handed) >= 2  # 40 tokens moved the ring past at least two 16-token blocks
    for head in store.slots:
        assert all(head.lookup(b) for b in handed)  # every head holds the blocks that left
        assert len(head.slot_of) <= store.n_slots


def test_the_numpy_column_write_stores_the_bytes_hot_codec_stores():
    from h3_runtime.kvcache import hot_codec
    from h3_runtime.kvcache.column_write import ColumnWriter

    g = torch.Generator().manual_seed(7)
    H, N, D = 3, 12, 64
    bufs = []
    for _ in range(2):
        k, v = torch.zeros(H, N, D, dtype=torch.int8), torch.zeros(H, N, D, dtype=torch.int8)
        bias = torch.full((H, N), float("-inf"))
        bufs.append((k, v, hot_codec.new_scales(k), hot_codec.new_scales(v), bias))
    for col in range(N):
        kn = torch.randn(H, 1, D, generator=g) * 10 ** (col % 5 - 2)
        vn = torch.randn(H, 1, D, generator=g) * 3
        kn[0, 0, : col % 3] = 127.5 * kn[0, 0, 0].abs() / 127  # near-ties for the rounding
        if col == 4:
            vn[1] = 0.0  # an all-zero vector: the smallest scale
        k, v, ks, vs, bias = bufs[0]
        hot_codec.write_kv(k, v, (ks, vs), (slice(None), col), kn[:, 0], vn[:, 0])
        bias[:, col] = 0.0
        assert ColumnWriter(*bufs[1]).write(col, kn, vn)
    for want, got in zip(bufs[0], bufs[1], strict=True):
        assert torch.equal(want, got)
    # not an int8 host buffer: the caller falls back to hot_codec
    f16 = torch.zeros(H, N, D, dtype=torch.float16)
    assert not ColumnWriter(f16, f16, None, None, torch.zeros(H, N)).write(0, kn, vn)
    assert not ColumnWriter(*bufs[1]).write(0, kn.double(), vn.double())


def test_int8_attention_with_a_reused_copy_is_decode_attention_bit_for_bit():
    from h3_runtime.kvcache import hot_codec
    from h3_runtime.kvcache.hot import HotPool
    from h3_runtime.kvcache.sparse_attention import decode_attention

    g = torch.Generator().manual_seed(11)
    H, N, D = 3, 300, 64
    scratch: list = []
    for step in range(3):  # the copy is made once, then reused
        q = torch.randn(1, 3 * H, 1, D, generator=g)
        k8, ks = hot_codec.quantise(torch.randn(H, N, D, generator=g) * 2)
        v8, vs = hot_codec.quantise(torch.randn(H, N, D, generator=g))
        bias = torch.zeros(H, N)
        bias[:, 50 + step : 90] = float("-inf")
        pool_a, pool_b = HotPool(10**8), HotPool(10**8)
        want = decode_attention(q, k8, v8, bias, 0.125, pool_a, False, ks, vs)
        got = decode_attention(q, k8, v8, bias, 0.125, pool_b, False, ks, vs, scratch=scratch)
        assert torch.equal(want, got)
        assert pool_a.peak_bytes == pool_b.peak_bytes and pool_b.used_bytes == 0
    assert len(scratch) == 1 and scratch[0].shape == (H, N, D)
    kept = scratch[0]  # a buffer in the query's dtype takes no up-cast copy
    decode_attention(q, k8.float(), v8.float(), bias, 0.125, HotPool(10**8), scratch=scratch)
    assert scratch == [kept]


@pytest.mark.parametrize("heads_key", ["moved", "all"])
def test_a_re_selection_moves_only_the_heads_whose_query_moved(cold_dir, monkeypatch, heads_key):
    """runtime.decode_reselect_heads: "moved" ranks and re-places only the KV heads whose query
    moved; "all" (the behaviour before it) every head of the layer."""
    model = tiny_llama(layers=1)  # 2 KV heads
    engine = _engine(model, cold_dir, decode_reselect_cosine=0.5, decode_reselect_max_tokens=1000,
                     decode_reselect_heads=heads_key)
    moved_steps: list[list[int]] = []
    held_before: list[list[set[int]]] = []
    held_after: list[list[set[int]]] = []
    select = tiered_attention.TieredLayerAttention._select

    def watching(self, q, n, scaling, heads=None):
        if heads is not None:
            moved_steps.append(heads)
            held_before.append([set(h.slot_of) for h in self.slots])
        select(self, q, n, scaling, heads)
        if heads is not None:
            held_after.append([set(h.slot_of) for h in self.slots])

    ranked_rows: list[int] = []  # how many KV heads each decode ranking scored
    relevance = BlockSummaries.relevance

    def counting_rows(self, q, n, scaling, refine=None, heads=None):
        rel = relevance(self, q, n, scaling, refine, heads)
        if q.shape[2] == 1:
            ranked_rows.append(rel.shape[0])
        return rel

    monkeypatch.setattr(tiered_attention.TieredLayerAttention, "_select", watching)
    monkeypatch.setattr(BlockSummaries, "relevance", counting_rows)
    engine.generate(_ids(600, 8), max_new_tokens=30, return_ids=True)
    if heads_key == "all":
        assert not moved_steps and len(ranked_rows) > 1 and set(ranked_rows) == {2}
        return
    partial = [i for i, heads in enumerate(moved_steps) if len(heads) < 2]
    assert partial  # some steps see one head's query move and not the other's
    # only the moved heads are ranked (the first selection ranks both)
    assert ranked_rows == [2] + [len(heads) for heads in moved_steps]
    for i in partial:
        kept = set(range(2)).difference(moved_steps[i])
        assert all(held_after[i][h] == held_before[i][h] for h in kept)
