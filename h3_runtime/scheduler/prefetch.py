"""Prefetch policy: guess which blocks the next steps will want, from the access pattern.

- sequential: the most relevant block moved forward by 1..window blocks since the last step
  -> the next `prefetch_window` blocks after it.
- jumping: any other move -> the blocks whose summary (box centre, all heads) has cosine
  similarity > `prefetch_similarity` with the current block, most similar first.
"""

from __future__ import annotations

import torch

SEQUENTIAL, JUMPING = "sequential", "jumping"


def detect_pattern(previous_top: int | None, top: int, window: int) -> str | None:
    """None on the first access; sequential when top - previous_top is in [0, max(window, 1)]."""
    if previous_top is None:
        return None
    return SEQUENTIAL if 0 <= top - previous_top <= max(window, 1) else JUMPING


def prefetch_candidates(pattern: str | None, top: int, n_blocks: int, window: int,
                        summaries: torch.Tensor, similarity: float) -> list[int]:
    """Block indices to bring closer to hot, best first (never `top` itself).

    summaries: (n_blocks, F) one vector per block (its key box centre, heads flattened)."""
    if pattern is None or window <= 0:
        return []
    if pattern == SEQUENTIAL:
        return [b for b in range(top + 1, top + 1 + window) if b < n_blocks]
    cur = summaries[top : top + 1]  # (1, F)
    sims = torch.nn.functional.cosine_similarity(summaries[:n_blocks], cur, dim=-1)  # (n_blocks,)
    sims[top] = -1.0
    order = torch.argsort(sims, descending=True)
    picked = order[sims[order] > similarity][:window]
    return picked.tolist()
