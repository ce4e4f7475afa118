"""Per-block key summaries of one layer, kept in warm (host memory), and the relevance they bound.

Each complete block gets the box of its keys (center, radius: (max +- min) / 2 per head and
dimension; stored (H_kv, D, blocks), the layout the per-token bound multiplies); `relevance`
turns the box into a Quest-style upper bound of q.k per block, which is how the layer picks
blocks without reading them. The box is kept in float16: it only ranks blocks (attention reads
the blocks' own bytes), and at half the bytes the summaries are 1/(2T) of the float32 KV they
summarise (3.1% at 16-token blocks) instead of 3/(2T) with a float32 box and mean key, which
made the warm tier's resident bytes (blocks + summaries) overshoot 20% of the KV when spilling.
"""

from __future__ import annotations

import torch

RELEVANCE_QUERIES = 64


BOX_DTYPE = torch.float16
_BOX_MAX = torch.finfo(BOX_DTYPE).max  # keys beyond it (none in the models we ship) saturate


class BlockSummaries:
    """Summary arrays indexed by block, grown by doubling: the box as (H_kv, D, capacity)."""

    def __init__(self, n_kv_heads: int, head_dim: int):
        H, D = n_kv_heads, head_dim
        self.center = torch.empty(H, D, 0, dtype=BOX_DTYPE)  # (max + min) / 2 of the block's keys
        self.radius = torch.empty(H, D, 0, dtype=BOX_DTYPE)  # (max - min) / 2
        self.in_warm = torch.zeros(0, dtype=torch.bool)  # whether the block's bytes are in warm
        self.n_blocks = 0

    @property
    def nbytes(self) -> int:
        """Host bytes of the summaries (they live in warm beside the blocks)."""
        return self.center.nbytes + self.radius.nbytes + self.in_warm.nbytes

    def add(self, b0: int, keys: torch.Tensor, block_tokens: int) -> None:
        """Summarises complete blocks b0, b0 + 1, ... of host keys (H_kv, nb * T, D) in one pass."""
        T = block_tokens
        H, n, D = keys.shape
        nb = n // T
        self._grow(b0 + nb, H, D)
        kf = keys.float().reshape(H, nb, T, D)
        kmin, kmax = kf.amin(2), kf.amax(2)  # (H_kv, nb, D)
        for name, value in (("center", (kmax + kmin) * 0.5), ("radius", (kmax - kmin) * 0.5)):
            box = value.clamp(-_BOX_MAX, _BOX_MAX).transpose(1, 2)  # (H_kv, D, nb)
            getattr(self, name)[:, :, b0 : b0 + nb] = box.to(BOX_DTYPE)
        self.n_blocks = max(self.n_blocks, b0 + nb)

    def block_vectors(self, n: int) -> torch.Tensor:
        """(n, H_kv * D) float: one vector per block (its box centre), for the scheduler's
        jumping-pattern prefetch, which looks for blocks similar to the most relevant one."""
        return self.center[:, :, :n].permute(2, 0, 1).reshape(n, -1).float()

    def _grow(self, n_blocks: int, H: int, D: int) -> None:
        """Room for n_blocks in the summary arrays (capacity doubles, so appends stay cheap)."""
        cap = self.center.shape[2]
        if n_blocks <= cap:
            return
        new = max(16, 2 * cap, n_blocks)
        for name in ("center", "radius"):
            grown = torch.zeros(H, D, new, dtype=BOX_DTYPE)
            grown[:, :, :cap] = getattr(self, name)
            setattr(self, name, grown)
        grown_w = torch.zeros(new, dtype=torch.bool)
        grown_w[: self.in_warm.numel()] = self.in_warm
        self.in_warm = grown_w

    def relevance(self, q: torch.Tensor, n: int, scaling: float) -> torch.Tensor:
        """Quest-style upper bound of q.k per block from the min/max-key box (center, radius)
        -> softmax over blocks per (query head, query) -> max over the queries and the query
        heads of each KV head: (H_kv, n) on the host, each KV head ranking blocks for itself.
        The max keeps a block that one query of one head (a retrieval head) needs badly; only the
        chunk's last RELEVANCE_QUERIES queries vote (they are the ones nearest what comes next).
        q: (1, Hq, C, D)."""
        H, D = self.center.shape[0], self.center.shape[1]
        qh = q[0, :, -RELEVANCE_QUERIES:].detach().to("cpu", torch.float32)  # (Hq, Q, D)
        qg = qh.reshape(H, -1, D)  # (H_kv, g*Q, D): query heads grouped by their KV head
        center, radius = self.center[:, :, :n].float(), self.radius[:, :, :n].float()  # (H_kv, D, n)
        ub = torch.bmm(qg, center) + torch.bmm(qg.abs(), radius)  # (H_kv, gQ, n)
        return torch.softmax(ub * scaling, dim=-1).amax(dim=1)  # (H_kv, n)
