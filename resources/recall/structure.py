"""Structural recall: the query asks for a table, figure, chart, diagram or formula (English or
Chinese) -> those regions, ranked by how well their caption, content and surrounding text match
the rest of the query; "Table 3" and "page 5" pin the number and the page. A hit's bbox is the
table or figure region itself.
"""

from __future__ import annotations

import re
import unicodedata

import numpy as np

from h3.ontology.document import Hit
from h3.resources.recall.documents import route
from h3.resources.recall.intent import (
    SMALL_FIGURE_WORDS,
    StructureIntent,
    detect_structure,
    strip_structure_words,
)
from h3.resources.recall.router import RecallContext, register_intent
from h3.resources.recall.text import coverage, doc_filter, preferred_documents, terms
from h3.resources.semantic.structures import STRUCTURAL_KINDS
from h3.resources.store.base import sql_str
from h3.resources.store.tables import STRUCTURES
from h3.resources.text_lang import join_spaced_han

COLUMNS = ["doc_id", "region_id", "page", "kind", "bbox", "caption", "text", "search_text",
           "number", "vector"]
EXACT_LIMIT = 5_000  # up to this many candidates are scored exactly; beyond, ANN + BM25 pools
POSITION_BONUS = 0.3  # "the first figure": as strong as a matching number
SMALL_BONUS = 0.15  # "the logo": small pictures first, text still decides between them
SMALL_FIGURE_AREA = 15_000.0  # square points: ~3% of a Letter page (logos, icons, stamps)
# Chinese, Japanese and Korean runs: `terms` keeps only Latin letters and digits, so these are
# matched as character bigrams (no word segmenter needed, and bigrams survive Korean particles)
# and symbols as themselves
_CJK_RUN = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]+")


def cjk_grams(text: str) -> set[str]:
    """Character bigrams of the CJK/Hangul runs of a text (a lone character stands alone), and
    the currency and other symbols in it (€, ¥, ™, ©), which `terms` drops too."""
    text = join_spaced_han(text)  # a vertical header reads "财 务 指 标"
    grams = {run[i:i + 2] for run in _CJK_RUN.findall(text)
             for i in range(max(len(run) - 1, 1))}
    return grams | {c for c in text if not c.isascii() and unicodedata.category(c) in ("Sc", "So")}


def match_share(q_terms: list[str], q_grams: set[str], text: str) -> float:
    """Share of the query's content terms and CJK bigrams (and symbols) found in the text."""
    total = len(q_terms) + len(q_grams)
    if not total:
        return 0.0
    found = coverage(q_terms, text) * len(q_terms) + len(q_grams & cjk_grams(text))
    return found / total


def _candidates(ctx: RecallContext, where: str, query: str, preferred: list[str]) -> list[dict]:
    """Every region of the asked kinds when there are few; else the ANN and full-text pools of
    the whole store and, searched on their own, of the documents the routing prior prefers
    (so a named company's tables are candidates however many others the store holds)."""
    if ctx.store.count_rows(STRUCTURES.name) <= EXACT_LIMIT:
        return ctx.store.rows(STRUCTURES.name, where, COLUMNS)
    pool: dict[str, dict] = {}
    scopes = [where] + ([f"{where} AND {doc_filter(preferred)}"] if preferred else [])
    for scope in scopes:
        for r in ctx.store.vector_search(STRUCTURES.name, ctx.query_vector(query), 200, scope,
                                         COLUMNS):
            pool.setdefault(r["region_id"], r)
        for r in ctx.store.text_search(STRUCTURES.name, query, 50, scope, COLUMNS):
            pool.setdefault(r["region_id"], r)
    return list(pool.values())


def _ordinal_ids(rows: list[dict], ordinal: int) -> set[str]:
    """Region ids at that position (1-based, -1 = last) in each document's reading order."""
    by_doc: dict[str, list[dict]] = {}
    for r in rows:
        by_doc.setdefault(r["doc_id"], []).append(r)
    picked = set()
    for doc_rows in by_doc.values():
        doc_rows.sort(key=lambda r: (r["page"], r["bbox"][1], r["bbox"][0]))
        index = ordinal - 1 if ordinal > 0 else len(doc_rows) + ordinal
        if 0 <= index < len(doc_rows):
            picked.add(doc_rows[index]["region_id"])
    return picked


def _position_bonus(intent: StructureIntent | None, row: dict, ordinal_ids: set[str]) -> float:
    """What the query says about where or what size the region is: "the second figure", "the
    logo" (a small picture)."""
    if intent is None:
        return 0.0
    bonus = POSITION_BONUS if row["region_id"] in ordinal_ids else 0.0
    box = row["bbox"]
    if (SMALL_FIGURE_WORDS & {w.lower() for w in intent.words} and row["kind"] == "figure"
            and (box[2] - box[0]) * (box[3] - box[1]) <= SMALL_FIGURE_AREA):
        bonus += SMALL_BONUS
    return bonus


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
    routing = route(ctx, query)  # the named company's (period's, form's) regions rank up
    rows = [r for r in _candidates(ctx, where, rest, preferred_documents(ctx, query))
            if r["doc_id"] in ctx.ok_doc_ids]
    if not rows:
        return []
    q = ctx.query_vector(rest)  # (384,)
    cos = np.asarray([r["vector"] for r in rows], dtype=np.float32) @ q  # (N,)
    q_terms, q_grams = terms(rest), cjk_grams(rest)
    ordinal_ids = (_ordinal_ids([r for r in rows if r["kind"] in intent.kinds], intent.ordinal)
                   if intent and intent.ordinal else set())
    scored = []
    for row, c in zip(rows, cos, strict=True):
        # orders this intent's own hits (the router fuses intents by rank, not by score); the
        # 1.0 floor stays because `h3 recall` shows the score and its weak-match mark reads it
        score = 1.0 + 0.6 * max(float(c), 0.0) + 0.3 * match_share(q_terms, q_grams,
                                                                  row["search_text"])
        score += _position_bonus(intent, row, ordinal_ids)
        if intent and intent.number and row["number"] == intent.number:
            score += 0.3
        if intent and row["kind"] not in intent.kinds:
            score -= 0.25  # asked for a table, this is a figure: only if it matches much better
        score += routing.scores.get(row["doc_id"], 0.0)
        scored.append((score, row))
    scored.sort(key=lambda sr: (-sr[0], sr[1]["doc_id"], sr[1]["page"], sr[1]["region_id"]))
    return [Hit(doc_id=row["doc_id"], source=ctx.doc_sources.get(row["doc_id"], ""),
                page=int(row["page"]), bbox=tuple(float(v) for v in row["bbox"]),
                kind=row["kind"], text=row["text"], score=score, via="structure")
            for score, row in scored[:k]]


register_intent("structure", structure_recall, detect=lambda q: detect_structure(q) is not None)
