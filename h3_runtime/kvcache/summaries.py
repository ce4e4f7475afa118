"""Per-block key summaries of one layer, kept in warm (host memory), and the relevance they give.

Two kinds, one per engine:

- **Key sketches** (with a key basis, key_basis.py: what the engine uses whenever it selects
  blocks). Every token's key in the basis's r dimensions, int8, with one float16 scale per
  (head, token): 18 B per token-head, 3.5% of the float32 KV at r = 16. (One scale per block
  saves 2 B but moved with every key of the block: the float rounding that separates a loaded
  document's keys from recomputed ones then changed decode's picks and its answer.)
  `relevance` estimates each token's q.k as (q P).(k P) and ranks a block by its best token (in
  the spirit of Loki and of InfLLM's representative tokens). Against the box below, on 21
  FinanceBench questions at 8K tokens (teacher-forced top-1 agreement with full attention /
  KL; benchmarks/documents/results/filings_runtime*.json, both re-selecting every 2 tokens): 0.911 /
  0.059 -> 0.934 / 0.024 at 10% of the KV, 0.862 / 0.185 -> 0.917 / 0.046 at 5%.
  One large coordinate no longer loosens a whole block's score.
- **Key boxes** (no basis). Each complete block's min/max box (center, radius: (max +- min) / 2
  per head and dimension; (H_kv, D, blocks), the layout the bound multiplies), float16, turned
  into a Quest-style upper bound of q.k per block: 1/(2T) of the float32 KV.

Either only ranks blocks (attention reads the blocks' own bytes).
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F

RELEVANCE_QUERIES = 64

BOX_DTYPE = torch.float16
SCALE_DTYPE = torch.float16
_BOX_MAX = torch.finfo(BOX_DTYPE).max  # keys beyond it (none in the models we ship) saturate


class BlockSummaries:
    """Summary arrays grown in steps of a sixteenth: the box as (H_kv, D, capacity blocks), or the sketches as
    (H_kv, r, capacity tokens) int8 plus (H_kv, capacity tokens) scales."""

    def __init__(self, n_kv_heads: int, head_dim: int, basis: torch.Tensor | None = None):
        """basis: (H_kv, D, r) float32 (key_basis.py): per-token sketches instead of boxes."""
        H, D = n_kv_heads, head_dim
        self.basis, self.n_kv_heads = basis, H
        self.block_tokens = 0  # T, known from the first add
        self.center = torch.empty(H, D, 0, dtype=BOX_DTYPE)  # (max + min) / 2 of the block's keys
        self.radius = torch.empty(H, D, 0, dtype=BOX_DTYPE)  # (max - min) / 2
        r = basis.shape[2] if basis is not None else 0
        # tokens last: a decode query's estimates are one (H_kv, gQ, r) x (H_kv, r, n*T) product
        self.sketch = torch.empty(H, r, 0, dtype=torch.int8)  # (H_kv, r, capacity * T)
        self.sketch_scale = torch.empty(H, 0, dtype=SCALE_DTYPE)  # (H_kv, capacity * T)
        self.in_warm = torch.zeros(0, dtype=torch.bool)  # whether the block's bytes are in warm
        self.n_blocks = 0

    @property
    def nbytes(self) -> int:
        """Host bytes of the summaries (they live in warm beside the blocks)."""
        return sum(t.nbytes for t in (self.center, self.radius, self.sketch, self.sketch_scale,
                                      self.in_warm))

    def add(self, b0: int, keys: torch.Tensor, block_tokens: int) -> None:
        """Summarises complete blocks b0, b0 + 1, ... of host keys (H_kv, nb * T, D) in one pass."""
        T = self.block_tokens = block_tokens
        H, n, D = keys.shape
        nb = n // T
        self._grow(b0 + nb, H, D)
        kf = keys[:, : nb * T].detach().float()
        if self.basis is not None:
            proj = torch.bmm(kf, self.basis)  # (H_kv, nb*T, r)
            scale = (proj.abs().amax(-1) / 127.0).clamp_min(1e-8)
            q8 = torch.round(proj / scale[..., None]).to(torch.int8)
            self.sketch[:, :, b0 * T : (b0 + nb) * T] = q8.transpose(1, 2)
            self.sketch_scale[:, b0 * T : (b0 + nb) * T] = scale.to(SCALE_DTYPE)
        else:
            kb = kf.reshape(H, nb, T, D)
            kmin, kmax = kb.amin(2), kb.amax(2)  # (H_kv, nb, D)
            for name, value in (("center", (kmax + kmin) * 0.5), ("radius", (kmax - kmin) * 0.5)):
                box = value.clamp(-_BOX_MAX, _BOX_MAX).transpose(1, 2)  # (H_kv, D, nb)
                getattr(self, name)[:, :, b0 : b0 + nb] = box.to(BOX_DTYPE)
        self.n_blocks = max(self.n_blocks, b0 + nb)

    def block_vectors(self, n: int) -> torch.Tensor:
        """(n, features) float: one vector per block (its box centre, or its mean sketch), for the
        scheduler's jumping-pattern prefetch, which looks for blocks similar to the most relevant."""
        if self.basis is not None:
            H, r, _ = self.sketch.shape
            m = n * self.block_tokens
            est = self.sketch[:, :, :m].float() * self.sketch_scale[:, None, :m].float()
            return est.reshape(H, r, n, -1).mean(3).permute(2, 0, 1).reshape(n, -1)  # (n, H_kv*r)
        return self.center[:, :, :n].permute(2, 0, 1).reshape(n, -1).float()

    def _grow(self, n_blocks: int, H: int, D: int) -> None:
        """Room for n_blocks in the summary arrays."""
        cap = self.in_warm.numel()
        if n_blocks <= cap:
            return
        # grown by a sixteenth (at least 16 blocks), not doubled: the arrays' capacity is
        # resident host memory, and doubling held up to 2x the sketches' 3.5% of the KV (the
        # spill variant's resident bytes went over 20% of full attention's on that slack alone)
        new = max(n_blocks, cap + max(16, cap // 16))
        if self.basis is not None:
            T, r = self.block_tokens, self.sketch.shape[1]
            sketch = torch.zeros(H, r, new * T, dtype=torch.int8)
            sketch[:, :, : self.sketch.shape[2]] = self.sketch
            scale = torch.zeros(H, new * T, dtype=SCALE_DTYPE)
            scale[:, : self.sketch_scale.shape[1]] = self.sketch_scale
            self.sketch, self.sketch_scale = sketch, scale
        else:
            for name in ("center", "radius"):
                grown = torch.zeros(H, D, new, dtype=BOX_DTYPE)
                grown[:, :, :cap] = getattr(self, name)
                setattr(self, name, grown)
        grown_w = torch.zeros(new, dtype=torch.bool)
        grown_w[:cap] = self.in_warm
        self.in_warm = grown_w

    def relevance(self, q: torch.Tensor, n: int, scaling: float,
                  refine: Callable[..., None] | None = None,
                  heads: list[int] | None = None) -> torch.Tensor:
        """How much each of the first n blocks matters to the queries: each block's score
        (estimated best token, or the box's upper bound) -> softmax over blocks per (query head,
        query) -> max over the queries and the query heads of each KV head: (H_kv, n) on the
        host, each KV head ranking blocks for itself. The max keeps a block that one query of one
        head (a retrieval head) needs badly; only the chunk's last RELEVANCE_QUERIES queries vote
        (they are the ones nearest what comes next). q: (1, Hq, C, D). `refine(qg, score, heads)` may
        overwrite scores in place before the softmax (qg: (H_kv, gQ, D) the grouped queries,
        score: (H_kv, gQ, n), heads: the KV heads of their rows): decode re-scores its best
        candidates exactly (tiered_attention.py). `heads`: rank for those KV heads only (rows
        in that order; decode's heads whose query moved, reselect_gate.py); None: every head."""
        H, D = self.n_kv_heads, q.shape[-1]
        qh = q[0, :, -RELEVANCE_QUERIES:].detach().to("cpu", torch.float32)  # (Hq, Q, D)
        rows = slice(None) if heads is None else heads
        qg = qh.reshape(H, -1, D)[rows]  # (H_kv, g*Q, D): query heads grouped by their KV head
        if self.basis is not None:
            T = self.block_tokens
            qp = torch.bmm(qg, self.basis[rows])  # (H_kv, gQ, r)
            est = torch.bmm(qp, self.sketch[rows, :, : n * T].float())  # (H_kv, gQ, n*T)
            est.mul_(self.sketch_scale[rows, None, : n * T].float())
            score = F.max_pool1d(est, T, T)  # (H_kv, gQ, n): each block's best (3x amax's speed)
        else:
            center, radius = self.center[rows, :, :n].float(), self.radius[rows, :, :n].float()
            score = torch.bmm(qg, center) + torch.bmm(qg.abs(), radius)  # (H_kv, gQ, n)
        if refine is not None:
            refine(qg, score, list(range(H)) if heads is None else heads)
        return torch.softmax(score * scaling, dim=-1).amax(dim=1)  # (H_kv, n)
