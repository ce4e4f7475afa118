"""One layer's KV in sparse (tiered) mode: its hot buffer and appending tokens to it.

Hot, on the model's device, one buffer per layer reserved from the HotPool:
    K, V: (H_kv, S + R' + n_slots * T, D)  = [sinks | recent ring | block slots]
    bias: (H_kv, same length) 0 where a column holds a live token, -inf elsewhere
(in the model's dtype while prefilling; in `runtime.decode_kv_dtype` while decoding - int8 with
scales, hot_codec.py, or float16 for a float32 model: more slots in the same bytes, geometry.py)
Each KV head's block slots hold the blocks that head chose (Quest-style per-head selection:
heads read different places, and one retrieval head's needle need not displace the blocks the
other heads attend to); the sinks and the ring are the same in every head. The buffer has
`geometry.n_slots` slots while prefilling and `geometry.decode_slots` while decoding (the
prefill's transient chunk and staging room are free then: geometry.py); the slots come last, so
a re-allocation keeps the sinks and the ring where they are.
Warm: every complete block (T tokens) plus per-block summaries (summaries.py).
Cold: blocks demoted by the scheduler, as checksummed files (block_moves.py moves them).

Attention for new tokens = sinks + slot blocks (chosen from the summaries, placed by
block_moves.apply_placement) + the ring + the new tokens (causal) in one softmax
(sparse_attention.py); prefill_attention="exact": a chunk sees all (exact_prefill.py).
The ring is a circular buffer: attention ignores key order (keys carry their RoPE already).
"""

from __future__ import annotations

import torch

from h3_runtime.kvcache import hot_codec
from h3_runtime.kvcache.block import BlockId, KVBlock
from h3_runtime.kvcache.block_moves import BlockMoves, TierContext, apply_placement
from h3_runtime.kvcache.checksum import block_checksum
from h3_runtime.kvcache.column_write import ColumnWriter
from h3_runtime.kvcache.exact_prefill import streamed_exact_attention
from h3_runtime.kvcache.geometry import Geometry
from h3_runtime.kvcache.hot_codec import hot_bytes_per_token_layer
from h3_runtime.kvcache.rescore import rescore_exactly
from h3_runtime.kvcache.reselect_gate import ReselectGate
from h3_runtime.kvcache.sparse_attention import (
    BIAS_DTYPE,
    NEG_INF,
    chunk_attention,
    decode_attention,
)
from h3_runtime.kvcache.summaries import BlockSummaries
from h3_runtime.kvcache.tiers import LayerSlots
from h3_runtime.scheduler.ahas import LayerHeat, Placement

WARM_HEADROOM_TOKENS = 1024  # decode's room in a layer's warm arena beyond the prompt's blocks
PROMPT_MASS_FLOOR = 0.2  # a block the prompt's last queries gave this share stays a decode pick
RESIDENT_BONUS = 2.0  # decode: a block already in a head's slots counts this many times


class TieredLayerAttention:
    """One layer's tiered KV (hot buffer, warm blocks and summaries, cold files) and the sparse
    attention of new tokens over it: what a layer of `H3Cache` (hf/cache.py) runs once sparse."""

    def __init__(self, layer: int, geom: Geometry, n_kv_heads: int, head_dim: int,
                 dtype: torch.dtype, device: torch.device, ctx: TierContext):
        self.layer, self.g, self.ctx = layer, geom, ctx
        H, D = n_kv_heads, head_dim
        self.ring0, self.cap = geom.sink_tokens, geom.recent_capacity
        self.buffer_bytes = 0
        self.k = self.v = self.bias = None  # (H_kv, N, D), (H_kv, N, D), (H_kv, N): _allocate
        self.ks = self.vs = None  # an int8 buffer's K and V scales, (H_kv, N) (hot_codec.py)
        self.slots: LayerSlots | None = None  # per KV head: _allocate
        self.model_dtype, self.decode_dtype = dtype, ctx.decode_dtype or dtype
        self.live_tokens = 0  # sinks + ring tokens attended (for the pressure feedback)
        self._allocate(geom.n_slots, H, D, dtype, device)
        self._decoding_buffer = False  # which buffer the layer has: resize_slots
        self.n = 0  # tokens seen
        self.recent_start = 0  # first position held by the ring (a multiple of T)
        basis = ctx.key_basis[layer] if ctx.key_basis is not None else None  # (H_kv, D, r)
        self.summaries = BlockSummaries(H, D, basis)  # key sketches or boxes, in warm (host)
        self.moves = BlockMoves(layer, ctx, self.summaries)
        self.heat = LayerHeat(H)
        self.prefetched: set[int] = set()
        self.last_pattern: str | None = None
        self.after_prefill = False  # the last call was a prefill chunk (C > 1)
        self.decode_steps = 0  # tokens decoded since the last prefill
        self.gate = ReselectGate(ctx.reselect_every, ctx.reselect_cosine, ctx.reselect_max_tokens,
                                 basis)
        self.reselections = 0  # decode steps of this layer that re-selected (since created)
        self.selected_blocks = 0  # blocks older than the ring when the layer last selected
        self.last_rel: torch.Tensor | None = None  # (H_kv, n) the last decode selection's scores
        self.prompt_mass: torch.Tensor | None = None  # (H_kv, blocks) set by the exact prefill

    def _allocate(self, n_slots: int, H: int, D: int, dtype: torch.dtype,
                  device: torch.device) -> None:
        """(Re)allocates the hot buffer with `n_slots` block slots per KV head, in `dtype`. The
        sinks and the ring are carried over (cast); every slot starts empty (callers resize only
        where the selection starts afresh). The old buffer is released before the new one is
        reserved, the sinks and the ring waiting in host memory meanwhile, so a phase switch
        never holds two buffers of a layer (geometry.py)."""
        keep, T = self.ring0 + self.cap, self.g.block_tokens
        N = keep + n_slots * T
        # K, V (with an int8 buffer's scales) and the bias
        nbytes = N * (hot_bytes_per_token_layer(H, D, dtype) + H * BIAS_DTYPE.itemsize)
        carried = None
        if self.k is not None:
            self.slots.clear()
            cols = (slice(None), slice(0, keep))  # sinks + ring (bias: a few floats)
            carried = (hot_codec.read(self.k, self.ks, cols, self.model_dtype),
                       hot_codec.read(self.v, self.vs, cols, self.model_dtype),
                       self.bias[:, :keep].clone())
            self.ctx.pool.vacate(self.live_tokens * self.token_bytes)  # re-counted below
            self.k = self.v = self.ks = self.vs = None  # the old buffer goes before the new one
            self.ctx.pool.release(self.buffer_bytes, "layer buffers")
        self.ctx.pool.reserve(nbytes, "layer buffers")
        k = torch.zeros(H, N, D, dtype=dtype, device=device)
        v = torch.zeros(H, N, D, dtype=dtype, device=device)
        bias = torch.full((H, N), NEG_INF, dtype=BIAS_DTYPE, device=device)
        ks, vs = hot_codec.new_scales(k), hot_codec.new_scales(v)
        if carried is not None:
            cols = (slice(None), slice(0, keep))
            hot_codec.write(k, ks, cols, carried[0], scratch=True)
            hot_codec.write(v, vs, cols, carried[1], scratch=True)
            bias[:, :keep] = carried[2]
        self.k, self.v, self.bias, self.buffer_bytes = k, v, bias, nbytes
        self.ks, self.vs = ks, vs
        self.column = ColumnWriter(k, v, ks, vs, bias)  # a decoded token's column (int8, CPU)
        self.ctx.pool.occupy(self.live_tokens * self.token_bytes)
        self.slots = LayerSlots(k[:, keep:], v[:, keep:], bias[:, keep:], T, self.ctx.pool,
                                scales=None if ks is None else (ks[:, keep:], vs[:, keep:]))

    def reserve_warm(self, n_tokens: int, n_layers: int) -> None:
        """Room in this layer's warm arena for the complete blocks of `n_tokens` tokens plus
        WARM_HEADROOM_TOKENS, in one allocation (tiers.WarmTier.reserve), at most this layer's
        share of the warm capacity (a document larger than warm spills to cold; pinned memory,
        on a GPU machine, is physical whether used or not). Called with the token count a
        prefill will reach, before its chunks commit their blocks."""
        T = self.g.block_tokens
        H, _, D = self.k.shape
        share = self.ctx.warm.capacity_bytes // (n_layers * T * self.g.bytes_per_token_layer)
        self.ctx.warm.reserve(BlockId(self.layer, 0), (H, T, D), self.model_dtype,
                              min((n_tokens + WARM_HEADROOM_TOKENS) // T, share))

    def resize_slots(self, decoding: bool) -> None:
        """Gives the layer decode's buffer (`geometry.decode_slots` block slots per KV head, in
        the decode dtype) or the prefill's (`geometry.n_slots`, the model's dtype: before a
        prefill chunk needs its room, and so the exact prefill reads its ring at full
        precision); a no-op if it has it."""
        if decoding == self._decoding_buffer:  # every layer, every forward call: the common case
            return
        n_slots, dtype = ((self.g.decode_slots, self.decode_dtype) if decoding
                          else (self.g.n_slots, self.model_dtype))
        if n_slots != self.n_slots or dtype != self.k.dtype:
            H, _, D = self.k.shape
            self._allocate(n_slots, H, D, dtype, self.k.device)
        self._decoding_buffer = decoding

    @property
    def token_bytes(self) -> int:
        """Hot bytes of one token of this layer in the buffer's dtype now (K and V)."""
        return hot_bytes_per_token_layer(self.k.shape[0], self.k.shape[2], self.k.dtype)

    @property
    def n_slots(self) -> int:
        """Block slots per KV head now (prefill: geometry.n_slots; decode: decode_slots)."""
        return self.slots.n_slots

    @property
    def n_blocks(self) -> int:
        return self.summaries.n_blocks

    @property
    def in_warm(self) -> torch.Tensor:
        """(capacity,) bool: whether each complete block's bytes are in warm (else cold)."""
        return self.summaries.in_warm

    # ---- the step: select, attend, commit -------------------------------------------------
    def attend(self, q: torch.Tensor, k_new: torch.Tensor, v_new: torch.Tensor,
               scaling: float) -> torch.Tensor:
        """q: (1, Hq, C, D); k_new, v_new: (1, H_kv, C, D). Returns (1, C, Hq, D) and appends
        the new tokens (hot ring / warm blocks). Moves blocks between tiers per AHAS."""
        if q.shape[0] != 1:
            raise ValueError(f"H3 sparse attention serves batch size 1, got {q.shape[0]}")
        if q.shape[2] == 1:  # decode: the common step
            return self._decode(q, k_new[0], v_new[0], scaling)
        # exact prefill chunks attend to every block: no selection (it would only move blocks
        # and build heat from the path the KV came by - loaded or computed)
        n_cand = self.recent_start // self.g.block_tokens  # blocks older than the ring
        if self.ctx.selection and n_cand and self.n_slots and not self.ctx.exact_prefill:
            self._select(q, n_cand, scaling)
        self.after_prefill = True
        if self.ctx.exact_prefill:  # a prefill chunk attends to every previous token
            out = streamed_exact_attention(self, q, k_new[0], v_new[0], scaling)
        else:
            out = chunk_attention(q, self.k, self.v, self.bias, k_new[0], v_new[0], scaling,
                                  self.ctx.pool, self.g.bytes_per_token_layer)
        self.commit(k_new[0], v_new[0])
        return out

    def _decode(self, q: torch.Tensor, kn: torch.Tensor, vn: torch.Tensor,
                scaling: float) -> torch.Tensor:
        """One decoded token: it joins the ring first, then the blocks are selected among every
        block older than the (possibly advanced) ring, then one fused attention call reads the
        hot buffer in place (its bias masks the empty columns): no copy of the KV per step."""
        if self.after_prefill:
            self._reset_selection()
            self.after_prefill = False
        self.commit(kn, vn)  # (the cache gave every layer its decode buffer before layer 0 ran)
        n_cand = self.recent_start // self.g.block_tokens
        H = self.k.shape[0]
        due = self.gate.due(q, H)  # (reselect_gate.py)
        self.decode_steps += 1
        log = self.ctx.reselect_log
        if self.layer == 0 or not log:
            log.append(0)
        if due and self.ctx.selection and n_cand and self.n_slots:
            heads = (self.gate.moved_heads()
                     if self.last_rel is not None and self.ctx.reselect_moved_heads else None)
            if heads is not None and n_cand > self.selected_blocks:
                self._hand_over(n_cand)  # the heads that keep their blocks get the new ones too
            self._select(q, n_cand, scaling, heads)
            self.gate.selected(q, H, heads)
            self.reselections += 1
            log[-1] += 1
            self.selected_blocks = n_cand
        elif self.last_rel is not None and self.gate.enabled and n_cand > self.selected_blocks:
            self._hand_over(n_cand)  # (last_rel: this layer selected since the prefill)
        elif not self.ctx.selection and n_cand and self.n_slots:
            self._keep_newest(n_cand)
        return decode_attention(q, self.k, self.v, self.bias, scaling, self.ctx.pool,
                                self.ctx.decode_native_matmul, self.ks, self.vs,
                                scratch=self.ctx.upcast_scratch)  # (the up-cast copy's pages reused)

    def _reset_selection(self) -> None:
        """The first decoded token after a prefill starts the scheduler afresh (no heat, no
        selected blocks): what decode selects then depends only on the KV and the prompt, so a
        document loaded from cold and one recomputed give the same tokens under one budget."""
        self.slots.clear()
        self.heat = LayerHeat(len(self.slots))
        self.prefetched.clear()
        self.last_pattern = None
        self.decode_steps = 0
        self.gate.reset()
        self.selected_blocks, self.last_rel = 0, None
        if self.layer == 0:
            self.ctx.reselect_log.clear()

    def _select(self, q: torch.Tensor, n: int, scaling: float,
                heads: list[int] | None = None) -> None:
        """Ranks the n blocks older than the ring and places each KV head's best in its slots.
        `heads` (decode, the gate's moved heads): only those heads are ranked and re-placed; the
        others keep their blocks and their last scores (the new blocks handed to them by
        `_hand_over` included). None: every head."""
        ctx, s = self.ctx, self.summaries
        decoding = q.shape[2] == 1
        rescore = (self._rescore_exactly if decoding and s.basis is not None and ctx.exact_rescore
                   else None)
        if heads is not None:  # ranked for those heads only; the rest keep their last scores
            rel = self._kept_scores(n)
            rel[heads] = s.relevance(q, n, scaling, rescore, heads=heads)
        else:
            rel = s.relevance(q, n, scaling, rescore)  # (H_kv, n)
        if decoding:
            rel = self._decode_preferences(rel, n)
            self.last_rel = rel  # (a kept head's handed-over blocks stay inf: _hand_over)
        resident = [set(h.slot_of) for h in self.slots]
        # (a kept head's handed-over blocks score inf: finite for the heat, its plan is its own)
        ranked = rel if heads is None else torch.nan_to_num(rel, posinf=1.0)
        plan = ctx.scheduler.place(
            self.heat, ranked, resident, self.n_slots, self.g.top_k,
            ctx.pool.pressure, s.in_warm[:n], lambda: s.block_vectors(n),
            demotions=ctx.warm_over_watermark())
        if heads is not None:  # a head whose query did not move keeps its blocks: no copies
            for h in set(range(len(resident))).difference(heads):
                plan.hot[h], plan.evict[h] = sorted(resident[h]), []
        self.last_pattern = plan.pattern
        apply_placement(plan, self.slots, self.moves, self.prefetched, self.g.sink_tokens)
        ctx.scheduler.record_index(self.heat, *self.slots.held())
        ctx.scheduler.finish_step(self.heat, plan.top)

    def _rescore_exactly(self, qg: torch.Tensor, score: torch.Tensor, kv_heads: list[int]) -> None:
        """Decode's candidates re-scored with their exact keys from warm (rescore.py); row i
        of qg and score is KV head kv_heads[i]."""
        warm, layer = self.ctx.warm, self.layer
        head_of_row = torch.tensor(kv_heads, dtype=torch.long)

        def gather_keys(blocks: torch.Tensor, heads: torch.Tensor) -> torch.Tensor | None:
            got = warm.gather(layer, blocks, head_of_row[heads], values=False)
            return None if got is None else got[0]

        rescore_exactly(qg, score, self.ctx.exact_rescore * self.n_slots, self.summaries.in_warm,
                        gather_keys)

    def _kept_scores(self, n: int) -> torch.Tensor:
        """(H_kv, n): the last decode selection's scores, for the heads that do not re-select
        this step, without the resident bonus `_decode_preferences` gives them again; the
        blocks handed over since keep their inf (`_hand_over`: held until a ranking)."""
        last = self.last_rel
        rel = torch.zeros(last.shape[0], n, dtype=last.dtype)
        m = min(n, last.shape[1])
        rel[:, :m] = last[:, :m]
        heads, held = self.slots.held()
        if held.numel():
            rel[heads, held] /= RESIDENT_BONUS
        return rel

    def _hand_over(self, n: int) -> None:
        """Between re-selections (the gate reused the last choice): the blocks that left the ring
        since (older than it now, never ranked) join every KV head's slots, each in place of the
        head's block ranked lowest at the last selection (a free slot first), so the window keeps
        covering them until the next re-selection ranks them (reselect_gate.py)."""
        first, self.selected_blocks = self.selected_blocks, n
        new, rel = list(range(first, n)), self.last_rel
        hot, evict = [], []
        for h, head in enumerate(self.slots):
            held = list(head.slot_of)
            want = [b for b in new if b not in head.slot_of]
            out: list[int] = []
            spare = head.free_slots
            if len(want) > spare and held:
                score = (rel[h, torch.tensor(held)] if rel is not None and rel.shape[1] > max(held)
                         else torch.zeros(len(held)))
                worst = torch.argsort(score)[: len(want) - spare].tolist()
                out = [held[i] for i in worst]
            keep = [b for b in held if b not in out]
            hot.append(keep + want[: len(out) + spare])
            evict.append(out)
        if rel is not None:  # the handed-over blocks stay until the next re-selection ranks them
            grown = torch.full((rel.shape[0], n), float("inf"), dtype=rel.dtype)
            grown[:, :first] = rel[:, :first]
            self.last_rel = grown
        plan = Placement(hot=hot, evict=evict, demote_cold=[], prefetch=[], pattern=None,
                         hot_threshold=0.0)
        apply_placement(plan, self.slots, self.moves, self.prefetched, self.g.sink_tokens)

    def _keep_newest(self, n: int) -> None:
        """The window baseline while decoding: every head's slots hold the newest of the n blocks
        older than the ring, so the window spans the decode buffer as H3's selection does (left
        at the prefill's width, the baseline attended ~3x fewer tokens than H3 in the same hot
        bytes with int8 decode KV). Moves a block only when one leaves the ring."""
        newest = list(range(max(0, n - self.n_slots), n))
        held = [set(h.slot_of) for h in self.slots]
        if all(len(h) == len(newest) and h.issuperset(newest) for h in held):
            return
        plan = Placement(hot=[newest] * len(held), evict=[sorted(h.difference(newest)) for h in held],
                         demote_cold=[], prefetch=[], pattern=None, hot_threshold=0.0)
        apply_placement(plan, self.slots, self.moves, self.prefetched, self.g.sink_tokens)

    def _decode_preferences(self, rel: torch.Tensor, n: int) -> torch.Tensor:
        """Decode's block scores (H_kv, n) from the query's own relevance, plus:
        - the blocks the prompt's last queries read most (prompt_mass >= PROMPT_MASS_FLOOR: a
          needle, a variable chain) keep at least that share. Pinning every block they touched
          crowded real questions' own picks out (FinanceBench at 5%, box bound: top-1 0.862
          pinned vs 0.877 floored), while pinning only each head's top 4 of them lost RULER's
          needles (retention 0.42 at 4K 10%);
        - a block a head holds already counts RESIDENT_BONUS times: a near tie does not swap
          blocks every step (each swap is a copy into hot: at 8K, 10%, 648 blocks a decoded
          token at 1x, 374 at 2x, 241 at 4x; 4x lost RULER prompts at 4K in development)."""
        if self.prompt_mass is not None:
            m = min(n, self.prompt_mass.shape[1])
            pm = self.prompt_mass[:, :m]
            rel[:, :m] = torch.maximum(rel[:, :m], torch.where(pm >= PROMPT_MASS_FLOOR, pm, 0.0))
        heads, held = self.slots.held()  # all < n: older blocks
        if held.numel():
            rel[heads, held] *= RESIDENT_BONUS
        return rel

    # ---- appending tokens -----------------------------------------------------------------
    def commit(self, kn: torch.Tensor, vn: torch.Tensor) -> None:
        """Appends C tokens (kn, vn: (H_kv, C, D), any device): sinks, complete blocks to warm,
        the tail into the ring. Never allocates hot memory."""
        T, S, cap, r0 = self.g.block_tokens, self.g.sink_tokens, self.cap, self.ring0
        n0, n1 = self.n, self.n + kn.shape[1]
        dev = self.k.device
        if n1 == n0 + 1 and n0 >= S and n1 % T:  # a decoded token inside a block: one column
            col = n0 % cap + r0  # (the ring and the sinks stay as they are until a block completes)
            if not self.column.write(col, kn, vn):  # (column_write.py: the same bytes, faster)
                self._write((slice(None), col), kn[:, 0], vn[:, 0])
                self.bias[:, col] = 0.0
            self.ctx.pool.occupy(self.token_bytes)
            self.live_tokens, self.n = self.live_tokens + 1, n1
            return
        if n0 < S:
            m = min(S, n1) - n0
            self._write((slice(None), slice(n0, n0 + m)), kn[:, :m], vn[:, :m])
        b_new = -(-n0 // T)  # first block made of new tokens only
        if n0 % T and n0 // T < n1 // T:  # the block the ring had started completes now
            lo, hi = (n0 // T) * T, (n0 // T + 1) * T
            ring = (slice(None), torch.arange(lo, n0, device=dev) % cap + r0)
            # (while decoding, the ring's tokens went through the decode dtype: the block keeps
            # them as the hot buffer held them, in the model's dtype)
            self.add_blocks(n0 // T,
                            torch.cat([hot_codec.read(self.k, self.ks, ring, kn.dtype),
                                       kn[:, : hi - n0].cpu()], 1),
                            torch.cat([hot_codec.read(self.v, self.vs, ring, vn.dtype),
                                       vn[:, : hi - n0].cpu()], 1))
        if b_new < n1 // T:  # whole new blocks: summarised together (a loaded document: many)
            lo, hi = b_new * T - n0, (n1 // T) * T - n0
            self.add_blocks(b_new, kn[:, lo:hi].cpu(), vn[:, lo:hi].cpu())
        recent = cap - T
        start = max(self.recent_start, ((n1 - recent) // T) * T if n1 > recent else 0)
        first = max(n0, start)
        if first < n1:
            idx = torch.arange(first, n1, device=dev) % cap + r0
            self._write((slice(None), idx), kn[:, first - n0 :], vn[:, first - n0 :])
        ring_bias = self.bias[:, r0 : r0 + cap]  # the same columns live in every head
        ring_bias.fill_(NEG_INF)
        ring_bias[:, torch.arange(start, n1, device=dev) % cap] = 0.0
        sinks_live = min(S, n1) if start > 0 else 0  # before that, the ring holds the sinks
        self.bias[:, :S] = NEG_INF
        self.bias[:, :sinks_live] = 0.0
        live = sinks_live + (n1 - start)
        delta = (live - self.live_tokens) * self.token_bytes
        if delta >= 0:
            self.ctx.pool.occupy(delta)
        else:
            self.ctx.pool.vacate(-delta)
        self.live_tokens, self.n, self.recent_start = live, n1, start

    def _write(self, cols: tuple, kn: torch.Tensor, vn: torch.Tensor) -> None:
        """K and V of new tokens into the hot buffer's columns `cols`, in its dtype."""
        hot_codec.write_kv(self.k, self.v, None if self.ks is None else (self.ks, self.vs),
                           cols, kn, vn)

    def add_blocks(self, b0: int, keys: torch.Tensor, values: torch.Tensor) -> None:
        """Records complete blocks b0, b0 + 1, ... from (H_kv, nb * T, D) host tensors: their
        summaries in one pass, then each block (own contiguous copy, checksum) into warm."""
        T = self.g.block_tokens
        self.summaries.add(b0, keys, T)
        for i in range(keys.shape[1] // T):
            k = keys[:, i * T : (i + 1) * T].contiguous()  # (H_kv, T, D), owned by the block
            v = values[:, i * T : (i + 1) * T].contiguous()
            block = KVBlock(k, v, block_checksum(k, v))
            self.ctx.stats.bytes_moved["hot->warm"] += block.nbytes
            self.moves.to_warm(b0 + i, block)

    def fetch(self, b: int, to: str, count_hit: bool = True) -> KVBlock | None:
        """Block b from warm (or cold, verified; also re-cached in warm). None if corrupted."""
        return self.moves.fetch(b, to, count_hit)

    def release(self) -> None:
        """Frees the hot buffers (accounting) and this layer's warm blocks."""
        self.ctx.pool.release(self.buffer_bytes, "layer buffers")
        self.ctx.pool.vacate(self.live_tokens * self.token_bytes)
        self.ctx.pool.vacate(sum(h.usage_bytes for h in self.slots))
        self.moves.drop_warm()
        self.ctx.upcast_scratch.clear()
        self.k = self.v = torch.empty(0)
        self.live_tokens = 0
