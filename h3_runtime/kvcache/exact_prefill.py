"""Exact attention for a prefill chunk in sparse mode, within the hot budget.

Sparse attention for a prefill chunk (sinks + ring + top-k blocks) leaves every token after the
first chunk, the question and the last prompt token included, computed without most of the
context. Here a chunk attends to ALL previous tokens instead: the layer's complete blocks older
than the ring are streamed from warm (or cold, checksum-verified) through a hot staging buffer a
group of blocks at a time, each group's bytes reserved in the HotPool (so the hot peak stays
under the budget; the group size comes from the free hot bytes), and the partial results are
merged with the online-softmax (log-sum-exp) trick, together with the ring and the chunk's own
tokens (causal). The result equals full attention up to float rounding. Decode keeps the
top-k selection path (TieredLayerAttention._attention).

On CPU each piece runs through PyTorch's fused flash-attention kernel, which also returns the
piece's log-sum-exp (`_FusedPieces`): the score matrix is never materialised, which is what made
the hand-written merge (`_OnlineSoftmax`, still used elsewhere) cost 2.4-4x full attention's
prefill. The query heads of one KV head are folded into the query axis, so no key is repeated.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

if TYPE_CHECKING:
    from h3_runtime.kvcache.tiered_attention import TieredLayerAttention

_FLASH_CPU = getattr(torch.ops.aten, "_scaled_dot_product_flash_attention_for_cpu", None)
MAX_GROUP_TOKENS = 1024  # bounds the (Hq, C, G*T) score temporaries, whatever the free budget


class _OnlineSoftmax:
    """Running max / sum / output of softmax(q.k) v over key pieces, per (KV head, query row)."""

    def __init__(self, q: torch.Tensor, n_kv_heads: int, scaling: float):
        _, Hq, C, D = q.shape
        self.Hq, self.C, self.D, self.scaling = Hq, C, D, scaling
        # query head h uses KV head h // g (transformers' repeat_kv): group them per KV head
        self.q = q[0].float().reshape(n_kv_heads, (Hq // n_kv_heads) * C, D)  # (H_kv, g*C, D)
        rows = self.q.shape[1]
        self.m = torch.full((n_kv_heads, rows, 1), float("-inf"), device=q.device)  # running max
        self.s = torch.zeros(n_kv_heads, rows, 1, device=q.device)  # running sum of exp
        self.o = torch.zeros(n_kv_heads, rows, D, device=q.device)  # running sum of exp * v

    def add(self, k: torch.Tensor, v: torch.Tensor, bias: torch.Tensor | None) -> None:
        """k, v: (H_kv, L, D) on q's device; bias: additive, broadcastable to (H_kv, g*C, L)."""
        scores = torch.bmm(self.q, k.float().transpose(1, 2)) * self.scaling  # (H_kv, g*C, L)
        if bias is not None:
            scores = scores + bias
        m_new = torch.maximum(self.m, scores.amax(-1, keepdim=True))  # (H_kv, g*C, 1)
        safe = torch.where(torch.isinf(m_new), torch.zeros_like(m_new), m_new)  # all -inf rows
        p = torch.exp(scores - safe)  # (H_kv, g*C, L)
        keep = torch.exp(self.m - safe)  # rescales what was summed under the old max
        self.s = self.s * keep + p.sum(-1, keepdim=True)
        self.o = self.o * keep + torch.bmm(p, v.float())  # (H_kv, g*C, D)
        self.m = m_new

    def row_lse(self) -> torch.Tensor:
        """(H_kv, g*C): log of the softmax denominator of every (head, query) row."""
        return (self.m + torch.log(self.s))[..., 0]

    def result(self, dtype: torch.dtype) -> torch.Tensor:
        """(1, C, Hq, D): the attention output in the layout the model expects."""
        out = (self.o / self.s).reshape(self.Hq, self.C, self.D)  # (Hq, C, D)
        return out.transpose(0, 1)[None].to(dtype)


class _FusedPieces:
    """Same contract as `_OnlineSoftmax` (CPU): each piece is one fused flash-attention call
    returning (output, log-sum-exp); pieces merge by their log-sum-exps."""

    def __init__(self, q: torch.Tensor, n_kv_heads: int, scaling: float):
        _, Hq, C, D = q.shape
        self.Hq, self.C, self.D, self.H, self.scaling = Hq, C, D, n_kv_heads, scaling
        self.q = q.reshape(1, n_kv_heads, (Hq // n_kv_heads) * C, D)  # (1, H_kv, g*C, D)
        self.o: torch.Tensor | None = None  # (1, H_kv, g*C, D) float32
        self.lse: torch.Tensor | None = None  # (1, H_kv, g*C, 1)

    def _merge(self, o: torch.Tensor, lse: torch.Tensor) -> None:
        o, lse = o.float(), lse.float()[..., None]
        if self.o is None:
            self.o, self.lse = o, lse
            return
        new = torch.logaddexp(self.lse, lse)
        self.o = self.o * torch.exp(self.lse - new) + o * torch.exp(lse - new)
        self.lse = new

    def add(self, k: torch.Tensor, v: torch.Tensor, bias: torch.Tensor | None) -> None:
        """k, v: (H_kv, L, D); bias: None, or an additive (L,) column mask (0 / -inf)."""
        if bias is not None:  # keep only the live columns (the ring's unused slots are -inf)
            live = torch.nonzero(bias == 0).flatten()
            if live.numel() == 0:
                return
            k, v = k.index_select(1, live), v.index_select(1, live)
        o, lse = _FLASH_CPU(self.q, k[None].to(self.q.dtype), v[None].to(self.q.dtype), 0.0,
                            False, scale=self.scaling)[:2]
        self._merge(o, lse)

    def add_causal(self, k: torch.Tensor, v: torch.Tensor) -> None:
        """The chunk's own C tokens (k, v: (H_kv, C, D)), causal: keys repeated per query head."""
        g = self.Hq // self.H
        q = self.q.reshape(1, self.Hq, self.C, self.D)
        o, lse = _FLASH_CPU(q, k.repeat_interleave(g, 0)[None].to(q.dtype),
                            v.repeat_interleave(g, 0)[None].to(q.dtype), 0.0, True,
                            scale=self.scaling)[:2]
        self._merge(o.reshape(1, self.H, g * self.C, self.D), lse.reshape(1, self.H, g * self.C))

    def row_lse(self) -> torch.Tensor:
        return self.lse[0, ..., 0]  # (H_kv, g*C)

    def result(self, dtype: torch.dtype) -> torch.Tensor:
        out = self.o.reshape(self.Hq, self.C, self.D)  # (Hq, C, D)
        return out.transpose(0, 1)[None].to(dtype)


PROBE_QUERIES = 32  # the chunk's last queries whose exact attention per block guides decode
# what the question points at (a key, a name) is followed by what the answer copies (the
# value): a block passes its share to the blocks holding the next ANSWER_SPAN_TOKENS tokens
ANSWER_SPAN_TOKENS = 16


class _BlockMass:
    """The exact attention mass each earlier block gets from the chunk's last PROBE_QUERIES
    queries (any head): SnapKV's observation window. After the last prompt chunk these are the
    question's final tokens, so the blocks they read (a needle, a variable chain) stay among
    decode's picks even where one decode query's own ranking puts them low."""

    def __init__(self, q: torch.Tensor, n_kv_heads: int, scaling: float, block_tokens: int):
        _, Hq, C, D = q.shape
        self.W, self.C, self.g, self.T = min(PROBE_QUERIES, C), C, Hq // n_kv_heads, block_tokens
        qw = q[0, :, C - self.W :].float()  # (Hq, W, D)
        self.q = qw.reshape(n_kv_heads, self.g * self.W, D) * scaling  # (H_kv, g*W, D)
        self.blocks: list[int] = []
        self.lse: list[torch.Tensor] = []  # per group: (H_kv, g*W, G) log-sum-exp per block

    def add(self, k: torch.Tensor, block_ids: list[int]) -> None:
        scores = torch.bmm(self.q, k.float().transpose(1, 2))  # (H_kv, g*W, G*T)
        H, R, _ = scores.shape
        self.lse.append(scores.reshape(H, R, len(block_ids), self.T).logsumexp(-1))
        self.blocks.extend(block_ids)

    def mass(self, row_lse: torch.Tensor, n_blocks: int) -> torch.Tensor:
        """(H_kv, n_blocks) on the host: per KV head, the max over its probe rows (query heads
        and queries) of the block's share of attention; row_lse: (H_kv, g*C) the full softmax
        denominators (rows: head in group, then query)."""
        out = torch.zeros(row_lse.shape[0], n_blocks)
        if not self.blocks:
            return out
        rows = torch.cat([torch.arange(j * self.C + self.C - self.W, (j + 1) * self.C)
                          for j in range(self.g)]).to(row_lse.device)
        total = row_lse[:, rows].float()  # (H_kv, g*W)
        lse = torch.cat(self.lse, -1)  # (H_kv, g*W, n)
        share = torch.exp(lse - total[..., None]).amax(dim=1).cpu()  # (H_kv, n)
        out[:, torch.tensor(self.blocks)] = share
        # the blocks after one the question reads rank with it: a key and the value the answer
        # copies often straddle a block boundary (RULER niah in prose: the block with the key and
        # the first 4 of 7 digits selected, the last 3 digits in the next block, never picked on
        # their own bound)
        own = out.clone()
        for shift in range(1, max(1, -(-ANSWER_SPAN_TOKENS // self.T)) + 1):
            out[:, shift:] = torch.maximum(out[:, shift:], own[:, :-shift])
        return out


def streamed_exact_attention(store: TieredLayerAttention, q: torch.Tensor, kn: torch.Tensor,
                             vn: torch.Tensor, scaling: float) -> torch.Tensor:
    """q: (1, Hq, C, D); kn, vn: (H_kv, C, D). Returns (1, C, Hq, D), exact over every previous
    token of the layer. Changes only tier statistics (and re-caches cold blocks in warm); hot
    staging is reserved per group and released before returning."""
    g, pool = store.g, store.ctx.pool
    T, bpt = g.block_tokens, g.bytes_per_token_layer
    dev, C = q.device, q.shape[2]
    fused = _FLASH_CPU is not None and dev.type == "cpu"
    acc = _FusedPieces(q, kn.shape[0], scaling) if fused else _OnlineSoftmax(q, kn.shape[0], scaling)
    # the observation window matters only after a forward call's last chunk (decode follows it;
    # the next chunk would replace it): scoring every chunk's window cost 1.4 s of a 23 s
    # prefill at 8K tokens in 8-token blocks
    probe = _BlockMass(q, kn.shape[0], scaling, T) if store.ctx.observe_window else None
    # 1. complete blocks older than the ring (they hold the sinks too), in staged groups
    n_old = store.recent_start // T
    b = 0
    while b < n_old:
        free_blocks = (pool.budget_bytes - pool.used_bytes) // (T * bpt)
        if free_blocks < 1:
            raise MemoryError("hot tier: no room to stage one block for exact prefill")
        group = list(range(b, min(n_old, b + min(free_blocks, max(1, MAX_GROUP_TOKENS // T)))))
        staged = len(group) * T * bpt
        pool.reserve(staged, "prefill staging")
        try:
            got = [(i, blk) for i, blk in zip(group, store.moves.fetch_group(group, to="hot"),
                                              strict=True) if blk is not None]  # corrupted: left out
            if got:
                k = torch.cat([blk.keys for _, blk in got], 1).to(dev)  # (H_kv, G*T, D)
                v = torch.cat([blk.values for _, blk in got], 1).to(dev)
                acc.add(k, v, None)
                if probe is not None:
                    probe.add(k, [i for i, _ in got])
                del k, v
        finally:
            pool.release(staged, "prefill staging")
        b = group[-1] + 1
    # 2. the recent ring (already hot: no copy); its bias masks the unused columns
    r0, cap = store.ring0, store.cap
    if store.n > store.recent_start:
        acc.add(store.k[:, r0 : r0 + cap], store.v[:, r0 : r0 + cap],
                store.bias[0, r0 : r0 + cap].to(dev))  # the ring's columns: the same in every head
    # 3. the chunk's own tokens, causal (hot already: the transient chunk)
    if fused:
        acc.add_causal(kn.to(dev), vn.to(dev))
    else:
        causal = torch.full((C, C), float("-inf"), device=dev).triu(1)  # (C, C)
        causal = causal.repeat(q.shape[1] // kn.shape[0], 1)  # (g*C, C): (head in group, query)
        acc.add(kn.to(dev), vn.to(dev), causal)
    store.prompt_mass = probe.mass(acc.row_lse(), n_old) if probe is not None else None
    return acc.result(q.dtype)
