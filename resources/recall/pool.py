"""Bounding text recall's rerank pool: only the chunks of the pages that are among the first k
are reranked.

A query naming a company with many filings brings the statement pages of every one of them
into the pool (text.py `statement_rows`: ~1,800 chunks at 1M chunks, where a company has ~70
filings), and the rerank's word overlap, page support and re-sorts over all of them were most
of a warm query's Python time. Every part of a chunk's final score but the word overlap is
cheap to compute for the whole pool at once (cosine, BM25, summary cosine, statement boost:
its `partial` score), and the overlap adds at most `slack`. A page's final score is its best
chunk's score, plus `support` x its second-best chunk's (text.py `page_support`), plus its
document's routing prior: so each page has a lower bound (no word overlap) and an upper bound
(all words). A page whose upper bound is below the k-th best lower bound can never be one of
the first k. The others are scored exactly, best upper bound first, until the next upper bound
is below the k-th best exact score found; the pages scoring at least that are kept, each with
every chunk (a merged hit carries all its boxes), in pool order, so the rerank, page support
and re-sorts rank the kept chunks exactly as they ranked them in the whole pool: the hits are
the same (tests/resources/test_recall_pool.py).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable

import numpy as np

# the bounds add the score's terms in another order than the rerank: a page on the threshold
# stays kept
MARGIN = 1e-6


def reachable(pages: list[tuple[str, int]], partial: np.ndarray, slack: float, support: float,
              prior: dict[str, float], allowed: set[str], k: int,
              overlap: Callable[[np.ndarray], np.ndarray] | None = None) -> np.ndarray:
    """Positions (ascending) of the pool's chunks whose page can be among the first k pages.

    pages: each chunk's (doc_id, page); partial: (P,) each chunk's score without its word
    overlap; slack: the most the overlap adds; support: the page-support share; prior: doc_id ->
    routing prior; allowed: the documents a hit may come from (others' chunks are dropped, as
    text recall drops them after ranking); overlap: the weighted word overlap of the chunks at
    some positions, when the pages within reach of the bounds are to be scored exactly too
    (best case first, until no page left can beat the k-th: only pages scoring at least the
    k-th best are kept)."""
    ids: dict[tuple[str, int], int] = {}
    page_of = np.fromiter((ids.setdefault(key, len(ids)) for key in pages), np.int64,
                          len(pages))  # (P,) each chunk's page number in `ids`
    keys = list(ids)
    ok = np.fromiter((key[0] in allowed for key in keys), bool, len(keys))  # (G,)
    if ok.sum() <= k:  # every allowed page is among the first k
        return np.flatnonzero(ok[page_of])
    order = np.lexsort((-partial, page_of))  # (P,) by page, best chunk first
    starts = np.flatnonzero(np.r_[True, page_of[order][1:] != page_of[order][:-1]])  # (G,)
    ends = np.r_[starts[1:], len(order)]  # pages in `ids` order (lexsort sorted them by id)
    best = partial[order][starts]  # (G,)
    has_second = ends - starts > 1
    second = np.where(has_second, partial[order][np.minimum(starts + 1, len(order) - 1)], 0.0)
    priors = np.fromiter((prior.get(key[0], 0.0) for key in keys), np.float64, len(keys))
    # a one-chunk page has no page support (text.py page_support: its second is 0)
    low = best + priors + np.where(has_second, support * np.maximum(second, 0.0), 0.0)
    high = (best + slack + priors
            + np.where(has_second, support * np.maximum(second + slack, 0.0), 0.0))  # (G,)
    within = ok & (high >= np.sort(low[ok])[-k] - MARGIN)  # (G,)
    if overlap is not None:
        within = _scored_exactly(np.flatnonzero(within), high, order, starts, ends, partial,
                                 priors, support, k, overlap)
    return np.flatnonzero(within[page_of])


def _scored_exactly(candidates: np.ndarray, high: np.ndarray, order: np.ndarray,
                    starts: np.ndarray, ends: np.ndarray, partial: np.ndarray,
                    priors: np.ndarray, support: float, k: int,
                    overlap: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
    """(G,) the candidate pages whose exact score is at least the k-th best page's. Pages
    are scored best case first; once k are scored, a page whose best case is below the k-th
    exact score found ends the loop (neither it nor any after it can be among the first k)."""
    exact: dict[int, float] = {}
    kth: list[float] = []  # min-heap of the k best exact scores so far
    for g in candidates[np.argsort(-high[candidates], kind="stable")]:
        if len(kth) == k and high[g] < kth[0] - MARGIN:
            break
        positions = order[starts[g]:ends[g]]
        scores = np.sort(partial[positions] + overlap(positions))[::-1]  # (n,) best first
        exact[g] = float(scores[0] + priors[g]
                         + (support * max(scores[1], 0.0) if len(scores) > 1 else 0.0))
        heapq.heappush(kth, exact[g])
        if len(kth) > k:
            heapq.heappop(kth)
    keep = np.zeros(len(high), bool)
    keep[[g for g, score in exact.items() if score >= kth[0] - MARGIN]] = True
    return keep
