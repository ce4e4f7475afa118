"""Decode's block selection: the prompt's attention picks a block and its successor, the
scheduler skips work that cannot change a step, and decode re-selects every N tokens."""

from __future__ import annotations

import torch

from h3_runtime.config import HbfConfig, SchedulerConfig
from h3_runtime.engine import H3Engine
from h3_runtime.kvcache import exact_prefill, tiered_attention
from h3_runtime.kvcache.exact_prefill import PROBE_QUERIES, _BlockMass
from h3_runtime.scheduler.ahas import AhasScheduler, LayerHeat
from tests.h3_runtime.conftest import kv_bytes_per_token, tiny_llama


def test_the_block_after_the_one_the_question_reads_ranks_with_it():
    # one KV head, one query head, 4-dim keys, 16-token blocks; block 1 holds what the probe
    # queries match (a needle's key), block 2 what follows it (the value the answer copies)
    T, D = 16, 4
    q = torch.zeros(1, 1, 4, D)
    q[..., 0] = 4.0  # every query looks along dimension 0
    keys = torch.zeros(1, 4 * T, D)
    keys[0, T : 2 * T, 0] = 3.0  # block 1: strongly matched
    keys[0, 2 * T : 3 * T, 1] = 3.0  # block 2: orthogonal to the queries (ranks low on its own)
    probe = _BlockMass(q, n_kv_heads=1, scaling=1.0, block_tokens=T)
    probe.add(keys, [0, 1, 2, 3])
    scores = torch.einsum("d,hnd->hn", q[0, 0, 0], keys)  # (1, 4T): the same for every query
    row_lse = scores.logsumexp(-1, keepdim=True).expand(1, 4)  # (H_kv, g*C)
    mass = probe.mass(row_lse, 4)[0]  # the one KV head's
    own_share = torch.exp(scores[0, 2 * T : 3 * T].logsumexp(0) - scores[0].logsumexp(0))
    assert mass[1] > 0.9  # the matched block takes almost all the attention
    assert mass[2] == mass[1] > own_share  # its successor ranks with it
    assert mass[3] < mass[2]  # and only the successor (the next 16 tokens)


def test_with_small_blocks_the_next_16_tokens_rank_with_the_block_the_question_reads():
    T, D = 8, 4  # 8-token blocks: a key's value can sit in either of the next two blocks
    q = torch.zeros(1, 1, 2, D)
    q[..., 0] = 4.0
    keys = torch.zeros(1, 5 * T, D)
    keys[0, T : 2 * T, 0] = 3.0  # block 1: the key the queries match
    probe = _BlockMass(q, n_kv_heads=1, scaling=1.0, block_tokens=T)
    probe.add(keys, [0, 1, 2, 3, 4])
    scores = torch.einsum("d,hnd->hn", q[0, 0, 0], keys)
    mass = probe.mass(scores.logsumexp(-1, keepdim=True).expand(1, 2), 5)[0]
    assert mass[2] == mass[3] == mass[1] > 0.9  # blocks 2 and 3 hold the next 16 tokens
    assert mass[4] < 0.1 and mass[0] < 0.1


def test_the_prompt_s_last_call_holds_the_whole_observation_window(cold_dir):
    model = tiny_llama(layers=2)
    engine = H3Engine(model=model, hbm_size_gb=kv_bytes_per_token(model) * 100 / 2**30,
                      cold_storage_path=cold_dir, config={"runtime": {"block_tokens": 16}})
    cache = engine.new_cache()
    C = cache.geometry.chunk_tokens
    for q_len in (17, PROBE_QUERIES + 1, PROBE_QUERIES + 5, C + 1, 400):
        sizes = cache.plan_chunks(q_len)
        assert sum(sizes) == q_len and min(sizes) > 1  # no 1-token call (it would pass for a decode)
        assert sizes[-1] >= min(PROBE_QUERIES, q_len, cache.geometry.chunk_tokens)


def _scheduler() -> AhasScheduler:
    return AhasScheduler(SchedulerConfig(), HbfConfig(prefetch_window=2))


def test_place_computes_demotions_only_when_they_will_be_carried_out():
    rel = torch.tensor([[1.0, 0.4, 0.01, 0.02]])  # (1 KV head, 4 blocks)
    in_warm = torch.ones(4, dtype=torch.bool)
    s = _scheduler()
    asked = s.place(LayerHeat(), rel.clone(), [set()], 1, 1, 0.0, in_warm)
    skipped = s.place(LayerHeat(), rel.clone(), [set()], 1, 1, 0.0, in_warm, demotions=False)
    assert asked.demote_cold == [2, 3] and skipped.demote_cold == []
    assert asked.hot == skipped.hot == [[0]]


def test_place_skips_a_prefetch_that_would_move_nothing():
    s = _scheduler()

    def sequential_step(in_warm: torch.Tensor) -> list[int]:
        state = LayerHeat()
        s.place(state, torch.tensor([[0.0, 0.0, 1.0, 0.0, 0.0, 0.0]]), [set()], 1, 1, 0.0, in_warm)
        s.finish_step(state, 2)
        return s.place(state, torch.tensor([[0.0, 0.0, 0.0, 1.0, 0.0, 0.0]]), [{2}], 1, 1, 0.0,
                       in_warm).prefetch

    all_warm = torch.ones(6, dtype=torch.bool)
    some_cold = all_warm.clone()
    some_cold[4] = False
    assert sequential_step(all_warm) == []  # the one slot is taken and every block is in warm
    assert sequential_step(some_cold) == [4, 5]  # block 4 can come from cold to warm


def test_decode_reselects_every_n_tokens(cold_dir, monkeypatch):
    model = tiny_llama(layers=2)
    ids = torch.randint(0, 128, (1, 400), generator=torch.Generator().manual_seed(3))
    calls: list[int] = []
    select = tiered_attention.TieredLayerAttention._select

    def counting(self, q, n, scaling, heads=None):
        if q.shape[2] == 1:
            calls.append(self.layer)
        return select(self, q, n, scaling, heads)

    monkeypatch.setattr(tiered_attention.TieredLayerAttention, "_select", counting)
    for every, expected in ((1, 9), (3, 3)):
        calls.clear()
        engine = H3Engine(model=model, hbm_size_gb=kv_bytes_per_token(model) * 100 / 2**30,
                          cold_storage_path=cold_dir,
                          config={"runtime": {"block_tokens": 16, "decode_reselect_every": every}})
        out = engine.generate(ids, max_new_tokens=10, return_ids=True)
        assert len(out) == 10 and engine.stats()["mode"] == "sparse"
        # 9 decode forwards (the first token comes from the prefill's logits), per layer
        assert calls.count(0) == calls.count(1) == expected


def test_decode_gets_more_block_slots_and_the_next_prefill_gets_its_room_back(cold_dir):
    model = tiny_llama(layers=2)
    engine = H3Engine(model=model, hbm_size_gb=kv_bytes_per_token(model) * 100 / 2**30,
                      cold_storage_path=cold_dir, config={"runtime": {"block_tokens": 16}})
    g = engine.geometry
    assert g.decode_slots > g.n_slots  # decode needs no prefill chunk or staging room
    assert g.hot_bytes(2) <= engine.budget_bytes
    cache = engine.new_cache()
    ids = torch.randint(0, 128, (1, 400), generator=torch.Generator().manual_seed(5))
    engine.generate(ids, max_new_tokens=4, cache=cache, return_ids=True)
    stores = [layer.store for layer in cache.layers]
    assert [s.n_slots for s in stores] == [g.decode_slots] * 2
    assert max(len(h.slot_of) for s in stores for h in s.slots) == g.decode_slots  # all used
    summary_bytes = sum(s.summaries.nbytes for s in stores)  # reported beside the warm blocks
    assert engine.stats()["warm_summary_bytes"] == summary_bytes > 0
    # a follow-up prompt on the same cache: its chunks need the room the extra slots took
    extra = torch.randint(0, 128, (1, 100), generator=torch.Generator().manual_seed(6))
    more = torch.cat([torch.tensor([cache.token_ids]), extra], 1)
    out = engine.generate(more, max_new_tokens=3, cache=cache, return_ids=True)
    assert len(out) == 3 and [s.n_slots for s in stores] == [g.decode_slots] * 2
    assert cache.pool.peak_bytes <= cache.pool.budget_bytes
    engine.generate(torch.cat([torch.tensor([cache.token_ids]), more[:, :50]], 1),
                    max_new_tokens=1, cache=cache)  # prefill only: no decode step follows
    assert [s.n_slots for s in stores] == [g.n_slots] * 2
    assert cache.pool.peak_bytes <= cache.pool.budget_bytes


def test_only_a_forward_call_s_last_chunk_scores_the_observation_window(cold_dir, monkeypatch):
    # decode follows the last chunk, and each chunk's window replaces the one before: scoring the
    # earlier chunks' windows (every earlier block read per chunk) was wasted prefill time
    model = tiny_llama(layers=2)
    engine = H3Engine(model=model, hbm_size_gb=kv_bytes_per_token(model) * 100 / 2**30,
                      cold_storage_path=cold_dir, config={"runtime": {"block_tokens": 16}})
    windows: list[int] = []  # the chunk length of each window scored
    init = exact_prefill._BlockMass.__init__

    def counting(self, q, *args, **kwargs):
        windows.append(q.shape[2])
        init(self, q, *args, **kwargs)

    monkeypatch.setattr(exact_prefill._BlockMass, "__init__", counting)
    cache = engine.new_cache()
    ids = torch.randint(0, 128, (1, 400), generator=torch.Generator().manual_seed(7))
    sizes = cache.plan_chunks(400)
    assert len(sizes) > 2  # a prompt of several chunks
    out = engine.generate(ids, max_new_tokens=3, cache=cache, return_ids=True)
    assert len(out) == 3
    assert windows == [sizes[-1]] * 2  # the last chunk only, in each of the two layers
    for layer in cache.layers:
        mass = layer.store.prompt_mass  # what decode's selection adds to the block bound
        assert mass is not None and mass.shape[1] >= 1 and float(mass.max()) > 0


def test_decode_keeps_the_prompt_s_strong_picks_and_prefers_the_blocks_a_head_holds(cold_dir):
    model = tiny_llama(layers=1)
    engine = H3Engine(model=model, hbm_size_gb=kv_bytes_per_token(model) * 100 / 2**30,
                      cold_storage_path=cold_dir, config={"runtime": {"block_tokens": 16}})
    ids = torch.randint(0, 128, (1, 400), generator=torch.Generator().manual_seed(5))
    engine.generate(ids, max_new_tokens=3)
    store = engine.cache.layers[0].store
    n, H = store.recent_start // store.g.block_tokens, len(store.slots)
    held = [set(s.slot_of) for s in store.slots]
    assert any(held) and n > 3
    store.prompt_mass = torch.zeros(H, n)
    store.prompt_mass[:, 1] = 0.3  # a block the prompt's last queries read hard: kept
    store.prompt_mass[:, 2] = tiered_attention.PROMPT_MASS_FLOOR / 2  # a glance: not pinned
    out = store._decode_preferences(torch.full((H, n), 0.01), n)
    for h in range(H):
        for b in range(n):
            base = 0.3 if b == 1 else 0.01
            bonus = tiered_attention.RESIDENT_BONUS if b in held[h] else 1.0
            assert abs(float(out[h, b]) - base * bonus) < 1e-6, (h, b)


def test_decode_re_scores_its_sketch_candidates_exactly_unless_configured_off(cold_dir, monkeypatch):
    model = tiny_llama(layers=2)
    ids = torch.randint(0, 128, (1, 400), generator=torch.Generator().manual_seed(7))
    calls: list[tuple[int, int]] = []  # (shortlist, keys gathered) per re-scoring
    rescore = tiered_attention.rescore_exactly

    def recording(qg, score, shortlist, in_warm, gather_keys):
        def gathered(blocks, heads):
            calls.append((shortlist, len(blocks)))
            return gather_keys(blocks, heads)
        return rescore(qg, score, shortlist, in_warm, gathered)

    monkeypatch.setattr(tiered_attention, "rescore_exactly", recording)
    for factor in (2, 0):
        calls.clear()
        engine = H3Engine(model=model, hbm_size_gb=kv_bytes_per_token(model) * 100 / 2**30,
                          cold_storage_path=cold_dir,
                          config={"runtime": {"block_tokens": 16, "decode_exact_rescore": factor}})
        engine.generate(ids, max_new_tokens=4, return_ids=True)
        if factor:
            shortlist = factor * engine.geometry.decode_slots
            assert calls and all(s == shortlist for s, _ in calls)
            # every warm candidate of every KV head: min(blocks older than the ring, shortlist)
            assert all(0 < n <= model.config.num_key_value_heads * shortlist for _, n in calls)
        else:
            assert calls == []  # the sketches alone
