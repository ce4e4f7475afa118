"""Tier round trips are bit-exact and leave the source untouched; the cold tier verifies every
load, survives a restart, respects its size cap (LRU)."""

from __future__ import annotations

import random

import pytest
import torch

from h3_runtime.kvcache.block import KVBlock, chain_hashes, content_key
from h3_runtime.kvcache.checksum import IntegrityError, block_checksum
from h3_runtime.kvcache.cold import KVBlockStore
from h3_runtime.kvcache.hot import HotBudgetError, HotPool
from h3_runtime.kvcache.tiers import HotSlots, TierFullError, WarmTier


def make_block(seed: int, dtype=torch.float32, shape=(3, 16, 8)) -> KVBlock:
    g = torch.Generator().manual_seed(seed)
    k = torch.randn(shape, generator=g).to(dtype)
    v = torch.randn(shape, generator=g).to(dtype)
    return KVBlock(k, v, block_checksum(k, v))


def hot_slots(n_slots: int, T: int = 16, pool: HotPool | None = None) -> HotSlots:
    k = torch.zeros(3, n_slots * T, 8)
    return HotSlots(k, torch.zeros_like(k), torch.full((n_slots * T,), float("-inf")), T,
                    pool or HotPool(10**9))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_round_trip_hot_warm_cold_is_bit_exact_and_source_untouched(tmp_path, dtype):
    src = make_block(1, dtype)
    k0, v0 = src.keys.clone(), src.values.clone()
    warm, cold, hot = WarmTier(10**8), KVBlockStore(tmp_path, 10**8), hot_slots(2)
    warm.store("b", src)
    src_after = (src.keys.clone(), src.values.clone())
    from_warm = warm.load("b")
    cold.store("b", from_warm)
    from_cold = cold.load("b")
    hot.k = hot.k.to(dtype)
    hot.v = hot.v.to(dtype)
    hot.store("b", from_cold)
    from_hot = hot.load("b")
    for got in (from_warm, from_cold, from_hot):
        assert torch.equal(got.keys, k0) and torch.equal(got.values, v0)
        assert got.keys.dtype == dtype
    assert torch.equal(src_after[0], k0) and torch.equal(src.keys, k0) and torch.equal(src.values, v0)
    # the warm copy is a copy: writing to it does not reach the source
    from_warm.keys.add_(1)
    assert torch.equal(src.keys, k0)


def test_tiers_report_medium_capacity_usage(tmp_path):
    warm, cold, hot = WarmTier(10**6), KVBlockStore(tmp_path, 10**6), hot_slots(4)
    b = make_block(2)
    for tier in (warm, cold, hot):
        tier.store(7, b) if tier is not cold else tier.store("k7", b)
        d = tier.describe()
        assert d["medium"] in ("hot", "warm", "cold") and d["usage_bytes"] >= b.nbytes
        assert d["capacity_bytes"] >= d["usage_bytes"]
    assert hot.lookup(7) and warm.lookup(7) and cold.lookup("k7")
    hot.drop(7), warm.drop(7), cold.drop("k7")
    assert hot.usage_bytes == warm.usage_bytes == cold.usage_bytes == 0


def test_hot_slots_scripted_fill_and_evict():
    hot = hot_slots(2)
    hot.store(1, make_block(1))
    hot.store(2, make_block(2))
    with pytest.raises(TierFullError):
        hot.store(3, make_block(3))
    hot.drop(1)
    hot.store(3, make_block(3), masked_prefix=4)
    assert sorted(hot.slot_of) == [2, 3]
    s = hot.slot_of[3] * 16
    assert torch.isinf(hot.bias[s : s + 4]).all() and (hot.bias[s + 4 : s + 16] == 0).all()


def test_hot_pool_refuses_over_budget():
    pool = HotPool(1000)
    pool.reserve(600, "a")
    with pytest.raises(HotBudgetError):
        pool.reserve(401, "b")
    assert pool.used_bytes == 600 and pool.peak_bytes == 600


def test_warm_tier_full_raises():
    warm = WarmTier(make_block(0).nbytes)
    warm.store(0, make_block(0))
    with pytest.raises(TierFullError):
        warm.store(1, make_block(1))


def test_cold_reuse_after_restart(tmp_path):
    KVBlockStore(tmp_path, 10**8).store("abc", make_block(5))
    again = KVBlockStore(tmp_path, 10**8)  # a new process: index rebuilt from the folder
    assert again.lookup("abc") and again.usage_bytes > 0
    assert torch.equal(again.load("abc").keys, make_block(5).keys)


def test_old_format_block_files_are_dropped_as_misses(tmp_path):
    """`.kvb` files (the hand-written format before safetensors) are deleted when a store
    opens: a miss, so the block is recomputed, never read by a second parser."""
    (tmp_path / "ab").mkdir()
    (tmp_path / "ab" / "abcd-L000.kvb").write_bytes(b"\x02\x00\x00\x00{}")
    cold = KVBlockStore(tmp_path, 10**8)
    assert not cold.lookup("abcd-L000") and cold.usage_bytes == 0
    assert not list(tmp_path.rglob("*.kvb"))


def test_cold_cap_evicts_least_recently_used(tmp_path):
    size = KVBlockStore(tmp_path / "probe", 10**8)
    size.store("x", make_block(0))
    one = size.usage_bytes
    cold = KVBlockStore(tmp_path / "c", 3 * one + 100)  # header sizes vary by a few bytes
    for i in range(3):
        cold.store(f"k{i}", make_block(i))
    cold.touch("k0")  # k1 is now the least recently used
    import os
    import time
    t = time.time()
    os.utime(cold.path_for("k1"), (t - 100, t - 100))
    cold._index["k1"] = (cold._index["k1"][0], t - 100)
    cold.store("k3", make_block(3))
    assert not cold.lookup("k1") and cold.lookup("k0") and cold.lookup("k3")
    assert cold.usage_bytes <= cold.capacity_bytes and cold.evictions == 1


def test_cold_set_cap_shrinks_the_folder_by_lru(tmp_path):
    cold = KVBlockStore(tmp_path, 10**8)
    for i in range(4):
        cold.store(f"k{i}", make_block(i))
    one = cold.usage_bytes // 4
    cold.set_cap(2 * one + 50)
    assert cold.usage_bytes <= cold.capacity_bytes == 2 * one + 50
    assert sum(cold.lookup(f"k{i}") for i in range(4)) == 2 and cold.evictions == 2


def test_one_cold_cap_covers_document_blocks_and_spilled_layer_blocks(tmp_path):
    """Stored documents' blocks (every layer) and the tiered cache's spilled blocks (one layer)
    live in one KVBlockStore: one cap, one LRU, one checksum."""
    from h3_runtime.reuse.doc_kv import DocumentKV

    layer_block = make_block(1)  # (H_kv, T, D): what a layer store spills
    doc_keys = torch.randn(2, 3, 40, 8)  # (L, H_kv, T, D): a 40-token document, 2 layers
    # 5 files; 240 B a file for the safetensors header (~216 B here) on top of the tensors
    cold = KVBlockStore(tmp_path, 2 * doc_keys.nbytes + 2 * layer_block.nbytes + 5 * 240)
    cold.store(content_key("aa" * 32, 0), layer_block)
    docs = DocumentKV(cold, tmp_path / "docs", block_tokens=16)
    index = docs.put("d", "m", list(range(40)), doc_keys, doc_keys + 1)
    assert len(index.blocks) == 3 and len(cold) == 4  # 16 + 16 + 8 tokens, plus the spilled one
    k, v = docs.load(index.key, 5, 37)
    assert torch.equal(k, doc_keys[:, :, 5:37]) and torch.equal(v, doc_keys[:, :, 5:37] + 1)
    cold.store(content_key("bb" * 32, 0), make_block(2))
    assert cold.evictions == 0
    cold.store(content_key("cc" * 32, 0), make_block(3))  # past the cap: the LRU file goes
    assert cold.evictions == 1 and not cold.lookup(content_key("aa" * 32, 0))
    assert docs.find("d", "m") is not None
    cold.store(content_key("dd" * 32, 0), make_block(4))  # next: the document's first block
    assert docs.find("d", "m") is None and cold.usage_bytes <= cold.capacity_bytes


def test_block_keys_extend_the_chain_incrementally():
    from h3_runtime.kvcache.block import BlockKeys

    keys = BlockKeys("m", 16, "s1")
    ids = list(range(70))
    keys.extend(ids[:20])
    assert keys.prefix_hashes() == chain_hashes("m", ids[:20], 16)
    keys.extend(ids[20:])
    assert keys.prefix_hashes() == chain_hashes("m", ids, 16)
    assert keys.cold_key(3, 1) == content_key(chain_hashes("m", ids, 16)[1], 3)
    assert keys.cold_key(3, 4) == "ss1-L003-B4"  # block 4 (tokens 64..79) is not complete


@pytest.mark.parametrize("iteration", range(20))
def test_cold_detects_every_bit_flip(tmp_path, iteration):
    rng = random.Random(iteration)
    cold = KVBlockStore(tmp_path, 10**8)
    cold.store("blk", make_block(iteration))
    path = cold.path_for("blk")
    data = bytearray(path.read_bytes())
    pos = rng.randrange(4, len(data))  # header or payload
    data[pos] ^= 1 << rng.randrange(8)
    path.write_bytes(bytes(data))
    with pytest.raises(IntegrityError):
        cold.load("blk")


def test_content_keys_depend_on_whole_prefix_and_model():
    a = chain_hashes("m1", list(range(64)), 16)
    b = chain_hashes("m1", [99] + list(range(1, 64)), 16)
    c = chain_hashes("m2", list(range(64)), 16)
    assert len(a) == 4 and all(x != y for x, y in zip(a, b, strict=True))
    assert a[0] != c[0] and chain_hashes("m1", list(range(70)), 16) == a
    assert content_key(a[0], 1) != content_key(a[0], 2)


def _layer_slots(H: int = 3, n_slots: int = 4, T: int = 4, D: int = 8, pool: HotPool | None = None):
    from h3_runtime.kvcache.tiers import LayerSlots

    k = torch.zeros(H, 2 + n_slots * T, D)  # 2 leading columns stand for the sinks and ring
    v = torch.zeros_like(k)
    bias = torch.full((H, 2 + n_slots * T), float("-inf"))
    return LayerSlots(k[:, 2:], v[:, 2:], bias[:, 2:], T, pool or HotPool(10**9)), k, v, bias


def test_layer_slots_copy_every_heads_own_slice_in_one_store_and_drop_them():
    H, T = 3, 4
    slots, k, v, bias = _layer_slots(H=H, T=T)
    blocks = {b: make_block(b, shape=(H, T, 8)) for b in range(5)}
    wanted = [[0, 3], [], [4, 1, 2]]
    slots.store(wanted, blocks, masked_prefix=2, masked_key=0)
    for h, want in enumerate(wanted):
        assert set(slots[h].slot_of) == set(want)
        for b in want:
            got = slots[h].load(b)  # the head's own slice of block b, in its slot
            assert torch.equal(got.keys[0], blocks[b].keys[h])
            assert torch.equal(got.values[0], blocks[b].values[h])
            s = 2 + slots[h].slot_of[b] * T
            expect = torch.zeros(T)
            if b == 0:
                expect[:2] = float("-inf")  # block 0's first tokens are the sinks: masked here
            assert torch.equal(bias[h, s : s + T], expect)
    assert torch.isinf(bias[1]).all()  # head 1 took nothing
    heads, held = slots.held()
    assert sorted(zip(heads.tolist(), held.tolist(), strict=True)) == sorted(
        (h, b) for h, want in enumerate(wanted) for b in want)
    slots.drop([[3], [], [1, 99]])  # 99 is not held: skipped
    assert set(slots[0].slot_of) == {0} and set(slots[2].slot_of) == {4, 2}
    heads, held = slots.held()  # the cache follows the change
    assert sorted(zip(heads.tolist(), held.tolist(), strict=True)) == [(0, 0), (2, 2), (2, 4)]
    assert int(torch.isfinite(bias).sum()) == 3 * T - 2  # blocks 0 (less its sinks), 4, 2


def test_layer_slots_count_occupancy_and_refuse_a_full_head():
    pool = HotPool(10**9)
    slots, *_ = _layer_slots(n_slots=2, pool=pool)
    blocks = {b: make_block(b, shape=(3, 4, 8)) for b in range(3)}
    slots.store([[0, 1], [2], []], blocks)
    assert pool.occupied_bytes == 3 * slots[0].block_bytes
    with pytest.raises(TierFullError):
        slots.store([[2], [], []], blocks)
    slots.drop([[0, 1], [2], []])
    assert pool.occupied_bytes == 0


@pytest.mark.parametrize("from_arena", [True, False])
def test_layer_slots_store_the_same_bytes_gathered_from_the_warm_arena_or_stacked(from_arena):
    from h3_runtime.kvcache.block import BlockId

    H, T = 3, 4
    slots, k, v, bias = _layer_slots(H=H, T=T)
    warm = WarmTier(10**8)
    blocks = {}
    for b in range(5):
        warm.store(BlockId(0, b), make_block(b, shape=(H, T, 8)))
        blocks[b] = warm.load(BlockId(0, b))
    wanted = [[0, 3], [], [4, 1, 2]]
    gather = (lambda bs, hs: warm.gather(0, bs, hs)) if from_arena else None
    slots.store(wanted, blocks, masked_prefix=2, masked_key=0, gather=gather)
    for h, want in enumerate(wanted):
        for b in want:
            s = 2 + slots[h].slot_of[b] * T
            assert torch.equal(k[h, s : s + T], make_block(b, shape=(H, T, 8)).keys[h])
            assert torch.equal(v[h, s : s + T], make_block(b, shape=(H, T, 8)).values[h])
    assert int(torch.isfinite(bias).sum()) == 5 * T - 2


def test_warm_arena_grows_reuses_rows_and_keeps_every_block():
    from h3_runtime.kvcache.block import BlockId

    one = make_block(0).nbytes
    warm = WarmTier(100 * one)
    for b in range(40):  # past the first 16 rows: the arena grows, the held blocks follow it
        warm.store(BlockId(2, b), make_block(b))
    assert all(torch.equal(warm.load(BlockId(2, b)).keys, make_block(b).keys) for b in range(40))
    reserved = warm.reserved_bytes
    assert warm.usage_bytes == 40 * one <= reserved
    for b in range(10):
        warm.drop(BlockId(2, b))
    for b in range(100, 110):  # the dropped rows are reused: nothing new reserved
        warm.store(BlockId(2, b), make_block(b))
    assert warm.reserved_bytes == reserved
    assert torch.equal(warm.load(BlockId(2, 105)).values, make_block(105).values)
    warm.store(BlockId(3, 0), make_block(7))  # another layer: another arena (16 rows)
    # a prefill's announced blocks: one allocation, capped at what the capacity has left
    warm.reserve(BlockId(2, 0), (3, 16, 8), torch.float32, 1000)
    assert warm.reserved_bytes == 100 * one
    assert all(torch.equal(warm.load(BlockId(2, b)).keys, make_block(b).keys)
               for b in range(10, 40))
    keys, values = warm.gather(2, [20, 105], [2, 0])
    assert torch.equal(keys[0], make_block(20).keys[2]) and torch.equal(values[1], make_block(105).values[0])
    assert warm.gather(2, [20, 5], [0, 0]) is None  # 5 was dropped
    assert warm.gather(2, [20, 4000], [0, 0]) is None  # never stored
    assert warm.gather(2, torch.tensor([105]), torch.tensor([1]), values=False)[1] is None
    assert torch.equal(warm.gather(3, [0], [1])[0][0], make_block(7).keys[1])  # its own arena
    for b in range(1, 16):  # layer 3 fills its 16 rows; the capacity is all reserved: no 17th
        warm.store(BlockId(3, b), make_block(b))
    with pytest.raises(TierFullError):
        warm.store(BlockId(3, 16), make_block(16))
    assert warm.usage_bytes == 56 * one and warm.reserved_bytes == 100 * one
    assert warm.describe()["reserved_bytes"] == warm.reserved_bytes
