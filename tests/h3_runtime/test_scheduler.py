"""AHAS rules, each scripted step by step on a few blocks with integer ids."""

from __future__ import annotations

import torch

from h3_runtime.config import HbfConfig, SchedulerConfig
from h3_runtime.scheduler.ahas import AhasScheduler, LayerHeat
from h3_runtime.scheduler.prefetch import JUMPING, SEQUENTIAL, detect_pattern, prefetch_candidates


def sched(**kw) -> AhasScheduler:
    return AhasScheduler(SchedulerConfig(**kw), HbfConfig())


def rel(*values: float) -> torch.Tensor:
    """One KV head's relevance per block: (1, n)."""
    return torch.tensor([values], dtype=torch.float64)


def test_heat_combines_decayed_frequency_and_relevance():
    s, st = sched(ahaz_alpha=0.5, relevance_weight=0.5), LayerHeat()
    s.record_access(st, [[0]])  # freq = [1]
    st.grow(2)
    s.record_access(st, [[0]])  # freq0 = 0.5 + 1 = 1.5, freq1 = 0
    heat = s.compute_heat(st, rel(0.0, 1.0))
    assert torch.allclose(heat, rel(0.5, 0.5))  # 0.5*1.5/1.5 + 0 ; 0 + 0.5*1
    s.record_access(st, [[1]])  # freq0 decays to 0.75, freq1 = 1
    heat = s.compute_heat(st, rel(1.0, 1.0))
    assert torch.allclose(heat, rel(0.5 * 0.75 + 0.5, 1.0))


def test_default_alpha_is_the_seed_value():
    assert SchedulerConfig().ahaz_alpha == 0.999


def test_top_k_relevant_blocks_are_promoted_and_others_evicted():
    s, st = sched(hbf_threshold=0.9, hbm_threshold=0.95), LayerHeat()
    p = s.place(st, rel(0.1, 0.9, 0.05, 0.8), resident=[{0, 2}], n_slots=2, top_k=2, pressure=0.0)
    assert p.hot == [[1, 3]] and p.evict == [[0, 2]]


def test_hot_threshold_keeps_hot_blocks_beyond_top_k():
    s, st = sched(hbm_threshold=0.95, hbf_threshold=0.9, relevance_weight=0.5), LayerHeat()
    st.grow(4)
    st.freq[:] = torch.tensor([[10.0, 0.0, 0.0, 10.0]], dtype=torch.float64)
    # block 3: freq 1.0 (normalised) and relevance 0.95 -> heat 0.975 >= 0.95 -> stays hot
    p = s.place(st, rel(0.0, 1.0, 0.2, 0.95), resident=[{3}], n_slots=3, top_k=1, pressure=0.0)
    hot = p.hot[0]
    assert hot[0] == 1 and 3 in hot and 2 not in hot and p.evict == [[]]


def test_memory_pressure_raises_hot_threshold_to_098():
    s, st = sched(hbf_threshold=0.9, hbm_threshold=0.95), LayerHeat()
    assert s.hot_threshold(0.5) == 0.95 and s.hot_threshold(0.86) == 0.98
    st.grow(3)
    st.freq[:] = torch.tensor([[0.0, 10.0, 10.0]], dtype=torch.float64)
    r = rel(1.0, 0.92, 0.2)  # block 1: heat 0.5 + 0.46 = 0.96: hot at 0.95, not at 0.98
    relaxed = s.place(st, r.clone(), resident=[{1}], n_slots=2, top_k=1, pressure=0.1)
    pressed = s.place(st, r.clone(), resident=[{1}], n_slots=2, top_k=1, pressure=0.9)
    assert relaxed.hot == [[0, 1]] and relaxed.hot_threshold == 0.95
    assert pressed.hot_threshold == 0.98 and pressed.hot == [[0]] and pressed.evict == [[1]]


def test_warm_between_thresholds_and_cold_below():
    s, st = sched(cold_threshold=0.05, hbf_threshold=0.3, hbm_threshold=0.95), LayerHeat()
    in_warm = torch.ones(4, dtype=torch.bool)
    # heats (no frequency yet): 0.5 * rel/max -> [0.5, 0.2, 0.02, 0.01]
    p = s.place(st, rel(1.0, 0.4, 0.04, 0.02), resident=[set()], n_slots=1, top_k=1,
                pressure=0.0, in_warm=in_warm)
    assert p.hot == [[0]]
    assert p.demote_cold == [2, 3]  # below T_cold -> cold; block 1 (0.2) stays warm


def test_sequential_pattern_prefetches_next_window():
    assert detect_pattern(None, 3, 2) is None
    assert detect_pattern(3, 4, 2) == SEQUENTIAL and detect_pattern(3, 9, 2) == JUMPING
    feats = torch.zeros(10, 4)
    assert prefetch_candidates(SEQUENTIAL, 4, 10, 2, feats, 0.7) == [5, 6]
    assert prefetch_candidates(SEQUENTIAL, 9, 10, 2, feats, 0.7) == []


def test_jumping_pattern_prefetches_similar_summaries():
    feats = torch.tensor([[1.0, 0.0], [0.0, 1.0], [0.9, 0.1], [0.5, 0.5], [1.0, 0.05]])
    got = prefetch_candidates(JUMPING, 0, 5, 3, feats, 0.7)
    assert got == [4, 2, 3]  # cos > 0.7 with block 0, most similar first; block 1 (cos 0) not
    assert prefetch_candidates(JUMPING, 0, 5, 1, feats, 0.7) == [4]


def test_place_reports_prefetch_from_access_pattern():
    s, st = sched(), LayerHeat()
    r = rel(0.0, 0.0, 1.0, 0.0, 0.0, 0.0)
    s.finish_step(st, s.place(st, r, [set()], 1, 1, 0.0).top)  # block 2
    r2 = rel(0.0, 0.0, 0.0, 1.0, 0.0, 0.0)
    p = s.place(st, r2, [{2}], 1, 1, 0.0)
    assert p.pattern == SEQUENTIAL and p.prefetch == [4, 5]


def test_each_kv_head_keeps_the_blocks_it_ranks_highest():
    s, st = sched(), LayerHeat(n_heads=2)
    r = torch.tensor([[0.9, 0.1, 0.8, 0.0], [0.0, 0.7, 0.1, 0.95]], dtype=torch.float64)
    p = s.place(st, r, resident=[{3}, {3}], n_slots=2, top_k=2, pressure=0.0,
                in_warm=torch.ones(4, dtype=torch.bool))
    assert p.hot == [[0, 2], [3, 1]] and p.evict == [[3], []]
    assert p.top == 3  # the block most relevant to any head
    s.record_access(st, p.hot)
    assert st.freq.tolist() == [[1.0, 0.0, 1.0, 0.0], [0.0, 1.0, 0.0, 1.0]]
