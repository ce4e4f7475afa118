"""Reciprocal rank fusion (RRF, Cormack et al. 2009): the one fusion score of recall, used by
text recall (its dense and BM25 lists, resources/recall/text.py) and by the router (the
intents' lists, resources/recall/router.py)."""

from __future__ import annotations

from collections.abc import Hashable, Iterable

RRF_K = 60  # the constant of Cormack et al. (2009); damps the head of each list


def rrf_scores(ranked: Iterable[Iterable[Hashable]], k: int = RRF_K) -> dict[Hashable, float]:
    """key -> sum over the ranked lists of 1 / (k + its best rank there), ranks from 1; a key
    counts once per list. The dict is in first-seen order (lists in order, each best first),
    which is the callers' tie order: a stable sort on the score keeps it."""
    fused: dict[Hashable, float] = {}
    for keys in ranked:
        seen: set[Hashable] = set()
        for rank, key in enumerate(keys):
            if key not in seen:
                seen.add(key)
                fused[key] = fused.get(key, 0.0) + 1.0 / (k + rank + 1)
    return fused
