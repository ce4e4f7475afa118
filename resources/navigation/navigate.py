"""Navigation: a question over one document picks the parts of its tree that answer it, then
the passages within them: the branch a `--doc` answer is given from.

Each chunk scores by its cosine to the question (SBERT vectors, as stored), the share of the
question's words it holds, and, when the question asks for a financial statement or a metric
one reports, whether its page is that statement's, the fuller the more (the statement over a
table repeating a few of its lines: resources/recall/statements.py, as text recall). A part
scores by its best chunk, plus its centroid's cosine (its summary vector) and the words of its
and its section's titles. The best `sections` parts are the branch; their chunks are loaded in
reading order, best chunks first when they exceed `max_tokens` or `max_share` of the document.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from h3.ontology.sections import Section
from h3.resources.navigation.tree import PART_TOKENS, chunk_order
from h3.resources.recall.statements import asked_statements, page_boosts, page_strengths
from h3.resources.recall.text import _stem, coverage, query_terms_all, stems
from h3.resources.settings import NavigationSettings

# parts a question loads by default: h3_config.yaml's `navigation.branch_sections` (the callers
# pass the loaded config's value, with `navigation.branch_tokens` as `max_tokens` and
# `navigation.branch_share` as `max_share`)
BRANCH_SECTIONS = NavigationSettings().branch_sections
COVERAGE_WEIGHT = 0.3  # share of the question's words a chunk holds
VECTOR_WEIGHT = 0.3  # the part's centroid cosine
TITLE_WEIGHT = 0.2  # the question's words in the part's and its section's titles


@dataclass(slots=True)
class Branch:
    """The parts chosen for a question (best first), and the passages loaded from them."""

    doc_id: str
    parts: list[Section]
    chunks: list[dict]  # the passages, in reading order
    tokens: int  # the passages' tokens
    doc_tokens: int  # the whole document's
    ranked: list[tuple[Section, float]] = field(default_factory=list)  # every part
    part_chunks: list[dict] = field(default_factory=list)  # every chunk of the chosen parts

    def pages(self) -> set[int]:
        return {p for s in self.parts for p in range(s.page_start, s.page_end + 1)}

    def to_json(self) -> list[dict]:
        return [{"section_id": s.section_id, "title": s.title, "pages": s.pages,
                 "page_start": s.page_start, "page_end": s.page_end, "tokens": s.tokens}
                for s in self.parts]


def chunk_scores(question: str, rows: Sequence[dict], question_vector: np.ndarray
                 ) -> np.ndarray:
    """(N,) score of each chunk row for the question (module docstring)."""
    if not rows:
        return np.zeros(0, np.float32)
    vectors = np.asarray([r["vector"] for r in rows], np.float32)  # (N, 384)
    scores = vectors @ np.asarray(question_vector, np.float32)  # (N,)
    scores += COVERAGE_WEIGHT * weighted_coverage(question, rows)
    asked = asked_statements(question)
    if asked:
        texts: dict[int, list[str]] = {}
        for r in rows:
            texts.setdefault(int(r["page"]), []).append(r["text"] or "")
        # scaled by the page's strength, as text recall does: the statement itself over a
        # segment table or a quarterly summary that repeats a few of its lines
        boost = page_boosts(asked, page_strengths(texts))
        scores += np.asarray([boost.get(int(r["page"]), 0.0) for r in rows], np.float32)
    return scores


def weighted_coverage(question: str, rows: Sequence[dict]) -> np.ndarray:
    """(N,) share of the question's words each chunk holds, each word weighted by its rarity in
    this document (log N / df): within one filing the company's name or "revenue" is on most
    pages and tells them apart less than "cyclical" does."""
    words = list(dict.fromkeys(_stem(w) for w in query_terms_all(question)))
    if not words or not rows:
        return np.zeros(len(rows), np.float32)
    have = [stems(r["text"] or "") for r in rows]
    present = np.asarray([[w in h for w in words] for h in have], np.float32)  # (N, W)
    weight = np.log((1 + len(rows)) / (1 + present.sum(axis=0)))  # (W,)
    total = float(weight.sum())
    return present @ weight / total if total > 0 else np.zeros(len(rows), np.float32)


def rank_parts(question: str, tree: Sequence[Section], rows: Sequence[dict],
               question_vector: np.ndarray) -> list[tuple[Section, float]]:
    """Every part of the tree with its score for the question, best first."""
    scores = chunk_scores(question, rows, question_vector)
    by_chunk = {r["chunk_id"]: float(s) for r, s in zip(rows, scores, strict=True)}
    titles = {s.section_id: s.title for s in tree if s.level == 1}
    words = query_terms_all(question)
    q = np.asarray(question_vector, np.float32)
    ranked = []
    for part in (s for s in tree if s.level == 2):
        best = max((by_chunk.get(c, 0.0) for c in part.chunk_ids), default=0.0)
        centroid = float(np.asarray(part.vector, np.float32) @ q) if part.vector else 0.0
        title = f"{titles.get(part.parent_id, '')} {part.title}"
        named = coverage(words, title, stems(title))
        ranked.append((part, best + VECTOR_WEIGHT * centroid + TITLE_WEIGHT * named))
    return sorted(ranked, key=lambda ps: -ps[1])


def choose(question: str, tree: Sequence[Section], rows: Sequence[dict],
           question_vector: np.ndarray, sections: int = BRANCH_SECTIONS,
           max_tokens: int | None = None, max_share: float | None = None) -> Branch:
    """The branch for `question`: the best `sections` parts and their chunks (the best ones
    first when they hold more than `max_tokens` tokens, or more than `max_share` of the
    document's tokens but never less than one part's, PART_TOKENS; then back in reading
    order). The loaded passages never exceed either bound."""
    if sections < 1:
        raise ValueError(f"sections must be >= 1, not {sections}")
    if max_share is not None:
        if not 0 < max_share <= 1:
            raise ValueError(f"max_share must be in (0, 1], not {max_share}")
        share = max(int(max_share * sum(_tokens(r) for r in rows)), PART_TOKENS)
        max_tokens = share if max_tokens is None else min(max_tokens, share)
    ranked = rank_parts(question, tree, rows, question_vector)
    parts = [p for p, _ in ranked[:sections]]
    wanted = {c for p in parts for c in p.chunk_ids}
    chosen = [r for r in rows if r["chunk_id"] in wanted]
    whole = list(chosen)
    if max_tokens is not None and sum(_tokens(r) for r in chosen) > max_tokens:
        scores = chunk_scores(question, chosen, question_vector)
        kept, total = [], 0
        for i in np.argsort(-scores, kind="stable"):
            if total + _tokens(chosen[i]) <= max_tokens:
                kept.append(chosen[i])
                total += _tokens(chosen[i])
        chosen = kept
    chosen.sort(key=lambda r: chunk_order(r["chunk_id"]))
    return Branch(doc_id=tree[0].doc_id if tree else "", parts=parts, chunks=chosen,
                  tokens=sum(_tokens(r) for r in chosen),
                  doc_tokens=sum(_tokens(r) for r in rows), ranked=ranked, part_chunks=whole)


def _tokens(row: dict) -> int:
    return int(row.get("token_count") or 0)
