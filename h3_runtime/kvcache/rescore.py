"""Decode's second ranking stage: the key sketches' best candidates re-scored with exact keys.

The sketches (summaries.py) keep r = 16 of a key's 64 dimensions: enough to find the blocks a
query might need, not always to order them. On 4K RULER prompts where H3 lost a multi-query key
or a multi-key needle at 10% or 5% of the KV, ranking every block by its exact best q.k (an
oracle, in development) kept them, and so did re-scoring only each head's 2 x slots best
candidates by the sketches (`runtime.decode_exact_rescore: 2`): the rest rank too low to
matter. The exact keys are read from the warm tier (a block in cold keeps its estimate: no
disk read to rank). What it costs is one gather of the candidates' keys per re-selection, one
indexing op a layer (`WarmTier.gather`), and their product with the query: ~10% of a decoded
token's time at 8K on a CPU, ~20% at 4K (README, runtime).
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F


def rescore_exactly(qg: torch.Tensor, score: torch.Tensor, shortlist: int, in_warm: torch.Tensor,
                    gather_keys: Callable[[torch.Tensor, torch.Tensor], torch.Tensor | None]) -> None:
    """Overwrites, in place, the estimated scores of each KV head's `shortlist` best blocks
    (runtime.decode_exact_rescore x its slots) with their exact best q.k. qg: (H_kv, g, D)
    queries grouped by KV head; score: (H_kv, g, n) each block's estimated best token per
    query; in_warm: (>= n,) bool; gather_keys(blocks, heads) -> (M, T, D): head heads[i]'s keys
    of block blocks[i], both (M,) long tensors (None: not all in warm, the estimates stay)."""
    H, _, n = score.shape
    m = min(n, shortlist)
    if m == 0:
        return
    cand = score.amax(1).topk(m, dim=-1).indices  # (H_kv, m): each head's best estimates
    heads = torch.arange(H).repeat_interleave(m)
    blocks = cand.reshape(-1)
    here = in_warm[blocks]
    every_one = bool(here.all())  # the common case: all candidates in warm
    if not every_one:  # those in cold keep their estimates
        heads, blocks = heads[here], blocks[here]
        if not blocks.numel():
            return
    keys = gather_keys(blocks, heads)  # (M, T, D), head-major
    if keys is None:
        return
    if every_one:  # one product per KV head over its m candidates, scattered back
        T, D = keys.shape[1:]
        est = torch.bmm(qg, keys.float().view(H, m * T, D).transpose(1, 2))  # (H_kv, g, m*T)
        score.scatter_(2, cand[:, None, :].expand(-1, score.shape[1], -1), F.max_pool1d(est, T, T))
        return
    best = torch.bmm(qg[heads], keys.float().transpose(1, 2)).amax(-1)  # (M, g)
    score.permute(0, 2, 1)[heads, blocks] = best  # a view: writes score's own elements
