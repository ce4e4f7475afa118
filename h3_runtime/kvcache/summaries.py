"""Per-block key summaries of one layer, kept in warm (host memory), and the relevance they bound.

Each complete block gets the box of its keys (center, radius: (max +- min) / 2 per head and
dimension; stored (H_kv, D, blocks), the layout the per-token bound multiplies) and their mean;
`relevance` turns the box into a Quest-style upper bound of q.k per block, which is how the
layer picks blocks without reading them.
"""

from __future__ import annotations

import torch

RELEVANCE_QUERIES = 64


class BlockSummaries:
    """Summary arrays indexed by block, grown by doubling: the box as (H_kv, D, capacity), the
    mean key as (capacity, H_kv, D)."""

    def __init__(self, n_kv_heads: int, head_dim: int):
        H, D = n_kv_heads, head_dim
        self.center = torch.empty(H, D, 0)  # (max + min) / 2 of the block's keys
        self.radius = torch.empty(H, D, 0)  # (max - min) / 2
        self.kmean = torch.empty(0, H, D)
        self.in_warm = torch.zeros(0, dtype=torch.bool)  # whether the block's bytes are in warm
        self.n_blocks = 0

    @property
    def nbytes(self) -> int:
        """Host bytes of the summaries (they live in warm beside the blocks)."""
        return self.center.nbytes + self.radius.nbytes + self.kmean.nbytes + self.in_warm.nbytes

    def add(self, b0: int, keys: torch.Tensor, block_tokens: int) -> None:
        """Summarises complete blocks b0, b0 + 1, ... of host keys (H_kv, nb * T, D) in one pass."""
        T = block_tokens
        H, n, D = keys.shape
        nb = n // T
        self._grow(b0 + nb, H, D)
        kf = keys.float().reshape(H, nb, T, D)
        kmin, kmax = kf.amin(2), kf.amax(2)  # (H_kv, nb, D)
        self.center[:, :, b0 : b0 + nb] = ((kmax + kmin) * 0.5).transpose(1, 2)  # (H_kv, D, nb)
        self.radius[:, :, b0 : b0 + nb] = ((kmax - kmin) * 0.5).transpose(1, 2)
        self.kmean[b0 : b0 + nb] = kf.mean(2).transpose(0, 1)
        self.n_blocks = max(self.n_blocks, b0 + nb)

    def _grow(self, n_blocks: int, H: int, D: int) -> None:
        """Room for n_blocks in the summary arrays (capacity doubles, so appends stay cheap)."""
        cap = self.kmean.shape[0]
        if n_blocks <= cap:
            return
        new = max(16, 2 * cap, n_blocks)
        for name in ("center", "radius"):
            grown = torch.zeros(H, D, new)
            grown[:, :, :cap] = getattr(self, name)
            setattr(self, name, grown)
        grown = torch.zeros(new, H, D)
        grown[:cap] = self.kmean
        self.kmean = grown
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
        center, radius = self.center[:, :, :n], self.radius[:, :, :n]  # (H_kv, D, n)
        ub = torch.bmm(qg, center) + torch.bmm(qg.abs(), radius)  # (H_kv, gQ, n)
        return torch.softmax(ub * scaling, dim=-1).amax(dim=1)  # (H_kv, n)
