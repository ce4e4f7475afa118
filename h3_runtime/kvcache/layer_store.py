"""One layer's KV in sparse (tiered) mode.

Hot, on the model's device, one buffer per layer reserved once from the HotPool:
    K, V: (H_kv, S + n_slots * T + R', D)  = [sinks | block slots | recent ring]
    bias: (same length,) 0 where a column holds a live token, -inf elsewhere
Warm: every complete block (T tokens) plus per-block summaries (min / max / mean key).
Cold: blocks demoted by the scheduler, as checksummed files.

Attention for new tokens = sinks + slot blocks (chosen from the summaries) + the ring + the new
tokens (causal) in one softmax; prefill_attention="exact": a chunk sees all (exact_prefill.py).
The ring is a circular buffer: attention ignores key order (keys carry their RoPE already).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

import torch

from h3_runtime.kvcache.block import BlockId, KVBlock
from h3_runtime.kvcache.checksum import IntegrityError, block_checksum
from h3_runtime.kvcache.cold import ColdStore
from h3_runtime.kvcache.exact_prefill import streamed_exact_attention
from h3_runtime.kvcache.geometry import Geometry
from h3_runtime.kvcache.hot import HotPool
from h3_runtime.kvcache.stats import TierStats
from h3_runtime.kvcache.tiers import HotSlots, TierFullError, WarmTier
from h3_runtime.scheduler.ahas import AhasScheduler, LayerHeat

log = logging.getLogger("h3_runtime")
NEG_INF = float("-inf")
RELEVANCE_QUERIES = 64


@dataclass(slots=True)
class TierContext:
    """What every layer store of one cache shares."""

    pool: HotPool
    warm: WarmTier
    cold: ColdStore
    stats: TierStats
    scheduler: AhasScheduler
    cold_key: Callable[[int, int], str]  # (layer, block) -> cold-tier key
    selection: bool = True  # False: sinks + window only (the StreamingLLM-like baseline)
    exact_prefill: bool = False  # True: prefill chunks (C > 1) attend exactly (exact_prefill.py)


class LayerStore:
    def __init__(self, layer: int, geom: Geometry, n_kv_heads: int, head_dim: int,
                 dtype: torch.dtype, device: torch.device, ctx: TierContext):
        self.layer, self.g, self.ctx = layer, geom, ctx
        H, D, N, T, S = n_kv_heads, head_dim, geom.per_layer_tokens, geom.block_tokens, geom.sink_tokens
        self.buffer_bytes = 2 * H * N * D * torch.empty((), dtype=dtype).element_size()
        ctx.pool.reserve(self.buffer_bytes, "layer buffers")
        self.k = torch.zeros(H, N, D, dtype=dtype, device=device)  # (H_kv, N, D)
        self.v = torch.zeros(H, N, D, dtype=dtype, device=device)  # (H_kv, N, D)
        self.bias = torch.full((N,), NEG_INF, dtype=torch.float32, device=device)  # (N,)
        s1 = S + geom.n_slots * T
        self.slots = HotSlots(self.k[:, S:s1], self.v[:, S:s1], self.bias[S:s1], T, ctx.pool)
        self.ring0, self.cap = s1, geom.recent_capacity
        self.n = 0  # tokens seen
        self.recent_start = 0  # first position held by the ring (a multiple of T)
        self.live_tokens = 0  # sinks + ring tokens attended (for the pressure feedback)
        # per-block summaries in warm (host memory), grown by doubling: (capacity, H_kv, D)
        self.center = torch.empty(0, H, D)  # (max + min) / 2 of the block's keys
        self.radius = torch.empty(0, H, D)  # (max - min) / 2
        self.kmean = torch.empty(0, H, D)
        self.in_warm = torch.zeros(0, dtype=torch.bool)
        self.n_blocks = 0
        self.heat = LayerHeat()
        self.prefetched: set[int] = set()
        self.last_pattern: str | None = None
        self.after_prefill = False  # the last call was a prefill chunk (C > 1)
        self.prompt_mass: torch.Tensor | None = None  # (blocks,) set by the exact prefill

    # ---- the step: select, attend, commit -------------------------------------------------
    def attend(self, q: torch.Tensor, k_new: torch.Tensor, v_new: torch.Tensor,
               scaling: float) -> torch.Tensor:
        """q: (1, Hq, C, D); k_new, v_new: (1, H_kv, C, D). Returns (1, C, Hq, D) and appends
        the new tokens (hot ring / warm blocks). Moves blocks between tiers per AHAS."""
        if q.shape[0] != 1:
            raise ValueError(f"H3 sparse attention serves batch size 1, got {q.shape[0]}")
        n_cand = self.recent_start // self.g.block_tokens  # blocks older than the ring
        decode = q.shape[2] == 1
        if decode and self.after_prefill:
            self._reset_selection()
        # exact prefill chunks attend to every block: no selection (it would only move blocks
        # and build heat from the path the KV came by - loaded or computed)
        if self.ctx.selection and n_cand and self.slots.n_slots and (
                decode or not self.ctx.exact_prefill):
            self._select(q, n_cand, scaling)
        self.after_prefill = not decode
        if q.shape[2] == 1:  # decode: the common step, no staging copy of the hot buffer
            out = self._decode_attention(q, k_new[0], v_new[0], scaling)
        elif self.ctx.exact_prefill:  # a prefill chunk attends to every previous token
            out = streamed_exact_attention(self, q, k_new[0], v_new[0], scaling)
        else:
            out = self._attention(q, k_new[0], v_new[0], scaling)
        self.commit(k_new[0], v_new[0])
        return out

    def _reset_selection(self) -> None:
        """The first decoded token after a prefill starts the scheduler afresh (no heat, no
        selected blocks): what decode selects then depends only on the KV and the prompt, so a
        document loaded from cold and one recomputed give the same tokens under one budget."""
        for b in list(self.slots.slot_of):
            self.slots.drop(b)
        self.heat = LayerHeat()
        self.prefetched.clear()
        self.last_pattern = None

    def _relevance(self, q: torch.Tensor, n: int, scaling: float) -> torch.Tensor:
        """Quest-style upper bound of q.k per block from the min/max-key box (center, radius)
        -> softmax over blocks per (head, query) -> max over queries and heads: (n,) on the host.
        The max keeps a block that one query of one head (a retrieval head) needs badly; only the
        chunk's last RELEVANCE_QUERIES queries vote (they are the ones nearest what comes next)."""
        H, D = self.center.shape[1], self.center.shape[2]
        Hq = q.shape[1]
        qh = q[0, :, -RELEVANCE_QUERIES:].detach().to("cpu", torch.float32)  # (Hq, Q, D)
        qg = qh.reshape(H, -1, D)  # (H_kv, g*Q, D): query heads grouped by their KV head
        center = self.center[:n].permute(1, 2, 0)  # (H_kv, D, n)
        radius = self.radius[:n].permute(1, 2, 0)
        ub = torch.bmm(qg, center) + torch.bmm(qg.abs(), radius)  # (H_kv, gQ, n)
        probs = torch.softmax(ub * scaling, dim=-1)  # (H_kv, gQ, n)
        return probs.reshape(Hq, -1, n).amax(dim=1).amax(dim=0)  # (n,)

    def _select(self, q: torch.Tensor, n: int, scaling: float) -> None:
        ctx, stats = self.ctx, self.ctx.stats
        rel = self._relevance(q, n, scaling)
        if q.shape[2] == 1 and self.prompt_mass is not None:  # decode: + the prompt's picks
            m = min(n, self.prompt_mass.numel())
            rel[:m] = torch.maximum(rel[:m], self.prompt_mass[:m])
        plan = ctx.scheduler.place(
            self.heat, rel, set(self.slots.slot_of), self.slots.n_slots, self.g.top_k,
            ctx.pool.pressure, self.in_warm[:n], self.kmean[:n].flatten(1))
        self.last_pattern = plan.pattern
        for b in plan.evict:
            self.slots.drop(b)
            stats.migrations["hot->warm"] += 1  # its bytes are already in warm/cold: nothing to copy
        for b in plan.hot:
            if self.slots.lookup(b):
                stats.hits["hot"] += 1
                continue
            if b in self.prefetched:
                stats.prefetch_hits += 1
                self.prefetched.discard(b)
            block = self.fetch(b, to="hot")
            if block is not None:
                self.slots.store(b, block, masked_prefix=self.g.sink_tokens if b == 0 else 0)
        for b in plan.prefetch:
            if self.slots.lookup(b) or (self.in_warm[b] and not self.slots.free_slots):
                continue
            stats.prefetches += 1
            self.prefetched.add(b)
            block = self.fetch(b, to="hot" if self.slots.free_slots else "warm", count_hit=False)
            if block is not None and self.slots.free_slots:
                self.slots.store(b, block, masked_prefix=self.g.sink_tokens if b == 0 else 0)
        warm = ctx.warm
        if warm.usage_bytes > ctx.scheduler.cfg.warm_watermark * warm.capacity_bytes:
            for b in plan.demote_cold:
                self.demote(b)
        ctx.scheduler.record_access(self.heat, list(self.slots.slot_of))
        ctx.scheduler.finish_step(self.heat, plan.hot[0] if plan.hot else None)

    def _decode_attention(self, q: torch.Tensor, kn: torch.Tensor, vn: torch.Tensor,
                          scaling: float) -> torch.Tensor:
        """One new token over [hot buffer | itself] without concatenating the buffer: the hot
        buffer is read in place (its bias masks empty columns) and the token's own key is a
        separate score column, so decode moves no KV bytes. q: (1, Hq, 1, D); kn, vn: (H_kv, 1, D).
        Same result as `_attention` with C = 1 up to float rounding."""
        H, N, D = self.k.shape
        Hq = q.shape[1]
        dev = self.k.device
        qg = q[0].reshape(H, Hq // H, D)  # (H_kv, g, D): query heads grouped by their KV head
        kn, vn = kn.to(dev), vn.to(dev)
        s_buf = torch.baddbmm(self.bias.to(q.dtype), qg, self.k.transpose(1, 2), alpha=scaling)
        s_new = torch.bmm(qg, kn.transpose(1, 2)) * scaling  # (H_kv, g, 1)
        p = torch.softmax(torch.cat([s_buf, s_new], -1).float(), -1).to(q.dtype)  # (H_kv, g, N+1)
        out = torch.baddbmm(p[..., N:] * vn, p[..., :N], self.v)  # (H_kv, g, D)
        return out.reshape(1, 1, Hq, D)

    def _attention(self, q: torch.Tensor, kn: torch.Tensor, vn: torch.Tensor,
                   scaling: float) -> torch.Tensor:
        """One fused sdpa call over [hot buffer | new tokens]; the concatenation is a staging
        copy accounted in the hot pool (the geometry reserves room for it)."""
        N, C = self.k.shape[1], q.shape[2]
        staging = (N + C) * self.g.bytes_per_token_layer
        pool = self.ctx.pool
        pool.reserve(staging, "attention staging")
        try:
            keys = torch.cat([self.k, kn.to(self.k.device)], dim=1)[None]  # (1, H_kv, N + C, D)
            values = torch.cat([self.v, vn.to(self.v.device)], dim=1)[None]
            mask = torch.empty(C, N + C, dtype=q.dtype, device=q.device)  # (C, N + C) additive
            mask[:, :N] = self.bias
            mask[:, N:] = torch.full((C, C), NEG_INF, dtype=q.dtype, device=q.device).triu(1)
            out = torch.nn.functional.scaled_dot_product_attention(
                q, keys, values, attn_mask=mask[None, None], scale=scaling, enable_gqa=True,
            )  # (1, Hq, C, D)
        finally:
            pool.release(staging, "attention staging")
        return out.transpose(1, 2)  # (1, C, Hq, D)

    # ---- appending tokens -----------------------------------------------------------------
    def commit(self, kn: torch.Tensor, vn: torch.Tensor) -> None:
        """Appends C tokens (kn, vn: (H_kv, C, D), any device): sinks, complete blocks to warm,
        the tail into the ring. Never allocates hot memory."""
        T, S, cap, r0 = self.g.block_tokens, self.g.sink_tokens, self.cap, self.ring0
        n0, n1 = self.n, self.n + kn.shape[1]
        dev = self.k.device
        if n0 < S:
            m = min(S, n1) - n0
            self.k[:, n0 : n0 + m] = kn[:, :m].to(dev)
            self.v[:, n0 : n0 + m] = vn[:, :m].to(dev)
        b_new = -(-n0 // T)  # first block made of new tokens only
        if n0 % T and n0 // T < n1 // T:  # the block the ring had started completes now
            lo, hi = (n0 // T) * T, (n0 // T + 1) * T
            idx = torch.arange(lo, n0, device=dev) % cap + r0
            self.add_blocks(n0 // T, torch.cat([self.k[:, idx].cpu(), kn[:, : hi - n0].cpu()], 1),
                            torch.cat([self.v[:, idx].cpu(), vn[:, : hi - n0].cpu()], 1))
        if b_new < n1 // T:  # whole new blocks: summarised together (a loaded document: many)
            lo, hi = b_new * T - n0, (n1 // T) * T - n0
            self.add_blocks(b_new, kn[:, lo:hi].cpu(), vn[:, lo:hi].cpu())
        recent = cap - T
        start = max(self.recent_start, ((n1 - recent) // T) * T if n1 > recent else 0)
        first = max(n0, start)
        if first < n1:
            idx = torch.arange(first, n1, device=dev) % cap + r0
            self.k.index_copy_(1, idx, kn[:, first - n0 :].to(dev))
            self.v.index_copy_(1, idx, vn[:, first - n0 :].to(dev))
        ring_bias = self.bias[r0 : r0 + cap]
        ring_bias.fill_(NEG_INF)
        ring_bias[torch.arange(start, n1, device=dev) % cap] = 0.0
        sinks_live = min(S, n1) if start > 0 else 0  # before that, the ring holds the sinks
        self.bias[:S] = NEG_INF
        self.bias[:sinks_live] = 0.0
        live = sinks_live + (n1 - start)
        self.ctx.pool.occupied_bytes += (live - self.live_tokens) * self.g.bytes_per_token_layer
        self.live_tokens, self.n, self.recent_start = live, n1, start

    def add_blocks(self, b0: int, keys: torch.Tensor, values: torch.Tensor) -> None:
        """Records complete blocks b0, b0 + 1, ... from (H_kv, nb * T, D) host tensors: their
        summaries in one pass, then each block (own contiguous copy, checksum) into warm."""
        T = self.g.block_tokens
        H, n, D = keys.shape
        nb = n // T
        self._grow(b0 + nb, H, D)
        kf = keys.float().reshape(H, nb, T, D)
        kmin, kmax = kf.amin(2), kf.amax(2)  # (H_kv, nb, D)
        self.center[b0 : b0 + nb] = ((kmax + kmin) * 0.5).transpose(0, 1)  # (nb, H_kv, D)
        self.radius[b0 : b0 + nb] = ((kmax - kmin) * 0.5).transpose(0, 1)
        self.kmean[b0 : b0 + nb] = kf.mean(2).transpose(0, 1)
        self.n_blocks = max(self.n_blocks, b0 + nb)
        for i in range(nb):
            k = keys[:, i * T : (i + 1) * T].contiguous()  # (H_kv, T, D), owned by the block
            v = values[:, i * T : (i + 1) * T].contiguous()
            block = KVBlock(k, v, block_checksum(k, v))
            self.ctx.stats.bytes_moved["hot->warm"] += block.nbytes
            self._to_warm(b0 + i, block)

    def _grow(self, n_blocks: int, H: int, D: int) -> None:
        """Room for n_blocks in the summary arrays (capacity doubles, so appends stay cheap)."""
        if n_blocks <= self.center.shape[0]:
            return
        new = max(16, 2 * self.center.shape[0], n_blocks)
        for name in ("center", "radius", "kmean"):
            old = getattr(self, name)
            grown = torch.zeros(new, H, D)
            grown[: old.shape[0]] = old
            setattr(self, name, grown)
        grown_w = torch.zeros(new, dtype=torch.bool)
        grown_w[: self.in_warm.numel()] = self.in_warm
        self.in_warm = grown_w

    def _to_warm(self, b: int, block: KVBlock) -> None:
        warm = self.ctx.warm
        try:
            warm.store(BlockId(self.layer, b), block, take_ownership=True)
            self.in_warm[b] = True
        except TierFullError:
            # warm is full: this block (the newest, hence least observed) goes straight to cold
            self.ctx.cold.store(self.ctx.cold_key(self.layer, b), block, self.layer, b)
            self.ctx.stats.move("warm->cold", block.nbytes)

    def fetch(self, b: int, to: str, count_hit: bool = True) -> KVBlock | None:
        """Block b from warm (or cold, verified; also re-cached in warm). None if corrupted."""
        stats, bid = self.ctx.stats, BlockId(self.layer, b)
        if self.in_warm[b]:
            block = self.ctx.warm.load(bid)
            self.ctx.warm.touch(bid)
            if count_hit:
                stats.hits["warm"] += 1
            if to == "hot":
                stats.move("warm->hot", block.nbytes)
            return block
        key = self.ctx.cold_key(self.layer, b)
        try:
            block = self.ctx.cold.load(key)
        except IntegrityError as exc:
            stats.integrity_errors += 1
            log.error("layer %d block %d: %s; the block is left out of attention", self.layer, b, exc)
            return None
        except KeyError:
            log.error("layer %d block %d: missing from the cold tier", self.layer, b)
            stats.integrity_errors += 1
            return None
        self.ctx.cold.touch(key)
        if count_hit:
            stats.hits["cold"] += 1
        stats.move(f"cold->{to}", block.nbytes)
        try:
            self.ctx.warm.store(bid, block, take_ownership=True)
            self.in_warm[b] = True
        except TierFullError:
            pass
        return block

    def demote(self, b: int) -> None:
        """warm -> cold: written once (content-keyed), then the warm copy is dropped."""
        bid = BlockId(self.layer, b)
        if not self.in_warm[b]:
            return
        block = self.ctx.warm.load(bid)
        key = self.ctx.cold_key(self.layer, b)
        if not self.ctx.cold.lookup(key):
            self.ctx.cold.store(key, block, self.layer, b)
            self.ctx.stats.move("warm->cold", block.nbytes)
        else:
            self.ctx.stats.migrations["warm->cold"] += 1
        self.ctx.warm.drop(bid)
        self.in_warm[b] = False

    def flush_to_cold(self) -> int:
        """Writes every complete block of this layer to cold (keeps warm copies). Returns count."""
        written = 0
        for b in range(self.n_blocks):
            key = self.ctx.cold_key(self.layer, b)
            if self.ctx.cold.lookup(key) or not self.in_warm[b]:
                continue
            self.ctx.cold.store(key, self.ctx.warm.load(BlockId(self.layer, b)), self.layer, b)
            written += 1
        return written

    def release(self) -> None:
        """Frees the hot buffers (accounting) and this layer's warm blocks."""
        self.ctx.pool.release(self.buffer_bytes, "layer buffers")
        self.ctx.pool.occupied_bytes -= self.live_tokens * self.g.bytes_per_token_layer
        self.ctx.pool.occupied_bytes -= self.slots.usage_bytes
        for b in range(self.n_blocks):
            self.ctx.warm.drop(BlockId(self.layer, b))
        self.k = self.v = torch.empty(0)
        self.live_tokens = 0
