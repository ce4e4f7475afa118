"""Moving one layer's complete blocks between warm and cold, and carrying out the scheduler's
placement for a step (which blocks become hot, which leave hot, which go to cold).

Every complete block is in warm or in cold (`BlockSummaries.in_warm` says which); a hot block
is a copy of one of those, so leaving hot never copies bytes back.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field

import torch

from h3_runtime.kvcache.block import BlockId, KVBlock
from h3_runtime.kvcache.checksum import IntegrityError
from h3_runtime.kvcache.cold import KVBlockStore
from h3_runtime.kvcache.hot import HotPool
from h3_runtime.kvcache.stats import TierStats
from h3_runtime.kvcache.summaries import BlockSummaries
from h3_runtime.kvcache.tiers import HotSlots, LayerSlots, TierFullError, WarmTier
from h3_runtime.scheduler.ahas import AhasScheduler, Placement

log = logging.getLogger("h3_runtime")


@dataclass(slots=True)
class TierContext:
    """What every layer store of one cache shares."""

    pool: HotPool
    warm: WarmTier
    cold: KVBlockStore
    stats: TierStats
    scheduler: AhasScheduler
    cold_key: Callable[[int, int], str]  # (layer, block) -> cold-tier key
    selection: bool = True  # False: sinks + window only (the StreamingLLM-like baseline)
    exact_prefill: bool = False  # True: prefill chunks (C > 1) attend exactly (exact_prefill.py)
    reselect_every: int = 1  # decode considers re-selecting the hot blocks every this many tokens
    # ... and then re-selects only if a KV head's query cosine to the one at its layer's last
    # selection fell below this (>= 1.0: always), or one choice served reselect_max_tokens
    # tokens already (reselect_gate.py)
    reselect_cosine: float = 1.0
    reselect_max_tokens: int = 1 << 30
    reselect_moved_heads: bool = True  # ... and only the heads whose query moved (else all)
    # per decode step since the last prefill: how many layers re-selected (the decode bench's
    # step kinds; layer 0 opens each step's entry)
    reselect_log: list[int] = field(default_factory=list)
    # decode attention's float copy of an int8 layer buffer, reused by every layer and token of
    # this cache on a CPU (sparse_attention.upcast): [tensor] once made
    upcast_scratch: list = field(default_factory=list)
    exact_rescore: int = 0  # decode re-scores this many x a head's slots exactly (rescore.py)
    key_basis: torch.Tensor | None = None  # (n_layers, H_kv, D, r): per-token key sketches
    decode_dtype: torch.dtype | None = None  # decode's hot buffers (None: the model's dtype)
    decode_native_matmul: bool = False  # decode attends the narrow buffer in its own dtype
    observe_window: bool = True  # the exact prefill's chunk is a forward call's last: it scores
    # its last queries' attention per block for decode (exact_prefill._BlockMass)

    def warm_over_watermark(self) -> bool:
        """Whether warm -> cold demotions are carried out now: only once the warm tier is
        fuller than the scheduler's watermark (with host memory to spare, a disk round trip
        would only cost time)."""
        return self.warm.usage_bytes > self.scheduler.cfg.warm_watermark * self.warm.capacity_bytes


class BlockMoves:
    """warm <-> cold moves of one layer's complete blocks."""

    def __init__(self, layer: int, ctx: TierContext, summaries: BlockSummaries):
        self.layer, self.ctx, self.summaries = layer, ctx, summaries

    def to_warm(self, b: int, block: KVBlock) -> None:
        """A newly completed block: into warm, or straight to cold when warm is full (the newest
        block is the least observed one)."""
        try:
            self.ctx.warm.store(BlockId(self.layer, b), block)
            self.summaries.in_warm[b] = True
        except TierFullError:
            self.ctx.cold.store(self.ctx.cold_key(self.layer, b), block, self.layer, b)
            self.ctx.stats.move("warm->cold", block.nbytes)

    def fetch(self, b: int, to: str, count_hit: bool = True) -> KVBlock | None:
        """Block b from warm (or cold, verified; also re-cached in warm). None if corrupted."""
        ctx, stats, bid = self.ctx, self.ctx.stats, BlockId(self.layer, b)
        if self.summaries.in_warm[b]:
            block = ctx.warm.load(bid)
            ctx.warm.touch(bid)
            if count_hit:
                stats.hits["warm"] += 1
            if to == "hot":
                stats.move("warm->hot", block.nbytes)
            return block
        key = ctx.cold_key(self.layer, b)
        try:
            block = ctx.cold.load(key)
        except IntegrityError as exc:
            stats.integrity_errors += 1
            log.error("layer %d block %d: %s; the block is left out of attention", self.layer, b, exc)
            return None
        except KeyError:
            log.error("layer %d block %d: missing from the cold tier", self.layer, b)
            stats.integrity_errors += 1
            return None
        ctx.cold.touch(key)
        if count_hit:
            stats.hits["cold"] += 1
        stats.move(f"cold->{to}", block.nbytes)
        try:
            ctx.warm.store(bid, block)
            self.summaries.in_warm[b] = True
        except TierFullError:
            pass
        return block

    def fetch_group(self, blocks: list[int], to: str, count_hit: bool = False) -> list[KVBlock | None]:
        """`fetch(b, to, count_hit)` for each block, with one pass over the warm ones (a
        streamed prefill reads every earlier block per chunk: ~250K reads at 8K tokens in
        8-token blocks, where per-block bookkeeping cost more than the copies)."""
        in_warm = self.summaries.in_warm[torch.tensor(blocks, dtype=torch.long)].tolist()
        warm_ids = [BlockId(self.layer, b) for b, w in zip(blocks, in_warm, strict=True) if w]
        warm_blocks = self.ctx.warm.load_many(warm_ids)
        if count_hit:
            self.ctx.stats.hits["warm"] += len(warm_blocks)
        if to == "hot" and warm_blocks:  # a layer's blocks all have one size
            self.ctx.stats.move("warm->hot", warm_blocks[0].nbytes * len(warm_blocks), len(warm_blocks))
        warm = iter(warm_blocks)
        return [next(warm) if w else self.fetch(b, to, count_hit)
                for b, w in zip(blocks, in_warm, strict=True)]

    def demote(self, b: int) -> None:
        """warm -> cold: written once (content-keyed), then the warm copy is dropped."""
        ctx, bid = self.ctx, BlockId(self.layer, b)
        if not self.summaries.in_warm[b]:
            return
        block = ctx.warm.load(bid)
        key = ctx.cold_key(self.layer, b)
        if not ctx.cold.lookup(key):
            ctx.cold.store(key, block, self.layer, b)
            ctx.stats.move("warm->cold", block.nbytes)
        else:
            ctx.stats.migrations["warm->cold"] += 1
        ctx.warm.drop(bid)
        self.summaries.in_warm[b] = False

    def drop_warm(self) -> None:
        """Frees this layer's warm copies (cold files stay for reuse)."""
        for b in range(self.summaries.n_blocks):
            self.ctx.warm.drop(BlockId(self.layer, b))


def apply_placement(plan: Placement, slots: LayerSlots, moves: BlockMoves,
                    prefetched: set[int], sink_tokens: int) -> None:
    """Carries out one step's placement over a layer's per-KV-head slots: evictions from hot,
    blocks made hot (each read from warm or cold once, whatever the heads wanting it; every
    head's slice copied in one go), prefetches, and the plan's warm -> cold demotions (planned only while
    warm is above its watermark: `TierContext.warm_over_watermark`; the moves before them only
    add to warm)."""
    stats = moves.ctx.stats
    read: dict[int, KVBlock | None] = {}  # this step's blocks in host memory, by index

    def host_copy(b: int, count_hit: bool = True) -> KVBlock | None:
        if b not in read:  # from warm (a hit) or cold (verified, re-cached in warm)
            read[b] = moves.fetch(b, to="warm", count_hit=count_hit)
        return read[b]

    def make_hot(head_slots: HotSlots, b: int, block: KVBlock) -> None:
        head_slots.store(b, block, masked_prefix=sink_tokens if b == 0 else 0)
        stats.move("warm->hot", head_slots.block_bytes)

    slots.drop(plan.evict)
    stats.migrations["hot->warm"] += sum(map(len, plan.evict))  # bytes still in warm/cold: no copy
    # blocks made hot: each read once (whatever the heads wanting it), then one copy per tensor
    # puts every head's slice of its blocks in place
    missing = [[b for b in hot if b not in h.slot_of] for h, hot in zip(slots, plan.hot, strict=True)]
    union = sorted({b for m in missing for b in m})
    for b in prefetched.intersection(union):
        stats.prefetch_hits += 1
        prefetched.discard(b)
    read.update(zip(union, moves.fetch_group(union, to="warm", count_hit=True), strict=True)
                if union else ())
    host = {b: read[b] for b in union if read[b] is not None}  # None: corrupted, left out
    got = [[b for b in want if b in host] for want in missing]
    for head_slots, hot, want, new in zip(slots, plan.hot, missing, got, strict=True):
        stats.hits["hot"] += len(hot) - len(want)
        if new:
            stats.move("warm->hot", head_slots.block_bytes * len(new), len(new))
    warm, layer = moves.ctx.warm, moves.layer
    slots.store(got, host, masked_prefix=sink_tokens, masked_key=0,  # block 0: the sinks
                gather=lambda bs, hs: warm.gather(layer, bs, hs))
    for b in plan.prefetch:
        room = [h for h in slots if h.free_slots and not h.lookup(b)]
        if not room and (moves.summaries.in_warm[b] or all(h.lookup(b) for h in slots)):
            continue  # no free slot and already in host memory: nothing to bring closer
        stats.prefetches += 1
        prefetched.add(b)
        block = host_copy(b, count_hit=False)
        if block is not None:
            for head_slots in room:
                make_hot(head_slots, b, block)
    for b in plan.demote_cold:
        moves.demote(b)
