"""Structural recall: the query asks for a table, figure, chart, diagram or formula (English or
Chinese) -> those regions, ranked by how well their caption, content and surrounding text match
the rest of the query; "Table 3" and "page 5" pin the number and the page. A hit's bbox is the
table or figure region itself.
"""

from __future__ import annotations

import numpy as np

from ontology.document import Hit
from resources.recall.intent import detect_structure, strip_structure_words
from resources.recall.router import RecallContext, register_intent
from resources.recall.text import coverage, terms
from resources.semantic.structures import STRUCTURAL_KINDS
from resources.semantic.tables import STRUCTURES
from resources.store.base import sql_str

COLUMNS = ["doc_id", "region_id", "page", "kind", "bbox", "caption", "text", "search_text",
           "number", "vector"]
EXACT_LIMIT = 5_000  # up to this many candidates are scored exactly; beyond, ANN + BM25 pools


def _candidates(ctx: RecallContext, where: str, query: str) -> list[dict]:
    if ctx.store.count_rows(STRUCTURES.name) <= EXACT_LIMIT:
        return ctx.store.rows(STRUCTURES.name, where, COLUMNS)
    pool = {r["region_id"]: r for r in ctx.store.vector_search(
        STRUCTURES.name, ctx.query_vector(query), 200, where, COLUMNS)}
    for r in ctx.store.text_search(STRUCTURES.name, query, 50, where, COLUMNS):
        pool.setdefault(r["region_id"], r)
    return list(pool.values())


def structure_recall(ctx: RecallContext, query: str, k: int) -> list[Hit]:
    """The k best table/figure/formula regions for the query (all kinds if it names none)."""
    intent = detect_structure(query)
    kinds = intent.kinds if intent else STRUCTURAL_KINDS
    if "table" in kinds and "figure" not in kinds:
        kinds = (*kinds, "figure")  # a table printed as an image is a figure to layout
    where = "kind IN (" + ", ".join(sql_str(x) for x in kinds) + ")"
    if intent and intent.page:
        where += f" AND page = {int(intent.page)}"
    rest = strip_structure_words(query) or query
    rows = [r for r in _candidates(ctx, where, rest) if r["doc_id"] in ctx.ok_doc_ids]
    if not rows:
        return []
    q = ctx.query_vector(rest)  # (384,)
    cos = np.asarray([r["vector"] for r in rows], dtype=np.float32) @ q  # (N,)
    q_terms = terms(rest)
    scored = []
    for row, c in zip(rows, cos, strict=True):
        score = 1.0 + 0.6 * max(float(c), 0.0) + 0.3 * coverage(q_terms, row["search_text"])
        if intent and intent.number and row["number"] == intent.number:
            score += 0.3
        if intent and row["kind"] not in intent.kinds:
            score -= 0.25  # asked for a table, this is a figure: only if it matches much better
        scored.append((score, row))
    scored.sort(key=lambda sr: (-sr[0], sr[1]["doc_id"], sr[1]["page"], sr[1]["region_id"]))
    return [Hit(doc_id=row["doc_id"], source=ctx.doc_sources.get(row["doc_id"], ""),
                page=int(row["page"]), bbox=tuple(float(v) for v in row["bbox"]),
                kind=row["kind"], text=row["text"], score=score, via="structure")
            for score, row in scored[:k]]


register_intent("structure", structure_recall, detect=lambda q: detect_structure(q) is not None)
