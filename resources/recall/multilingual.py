"""Dense recall over the multilingual vectors (`chunks_ml`, resources/models/multilingual.py).

A query is compared with each chunk through the model that embedded it: SBERT for `chunks.vector`,
multilingual-e5 for `chunks_ml.vector`. English questions over English documents see no change
(the e5 side is used only when `chunks_ml` has rows); a Chinese question skips SBERT, which reads
Chinese as noise; an English question over Chinese chunks (and, with multilingual_embedding:
all, a Chinese question over English ones) meets them through e5, which maps both languages into
one space.
"""

from __future__ import annotations

import numpy as np

from h3.resources.models.multilingual import calibrated, get_multilingual
from h3.resources.recall.router import RecallContext
from h3.resources.store.base import sql_str
from h3.resources.text_lang import ZH, detect_language

TABLE = "chunks_ml"
COLUMNS = ["doc_id", "chunk_id", "page", "bbox", "text", "kind", "section", "vector", "language"]


def available(ctx: RecallContext) -> bool:
    """Whether the store holds multilingual vectors (checked once per context)."""
    if ("ml_rows",) not in ctx.cache:
        ctx.cache[("ml_rows",)] = ctx.store.count_rows(TABLE)
    return ctx.cache[("ml_rows",)] > 0


def query_vector(ctx: RecallContext, query: str) -> np.ndarray:
    key = ("ml", query)
    if key not in ctx.cache:
        ctx.cache[key] = get_multilingual().queries([query])[0]  # (384,)
    return ctx.cache[key]


def sbert_understands(query: str) -> bool:
    """SBERT (English MiniLM) is asked only about queries that are not Chinese."""
    return detect_language(query) != ZH


def languages(ctx: RecallContext) -> list[str]:
    """The languages of the chunks that have e5 vectors (checked once per context)."""
    if ("ml_languages",) not in ctx.cache:
        ctx.cache[("ml_languages",)] = sorted(
            {r["language"] or "und" for r in ctx.store.rows(TABLE, None, ["language"])})
    return ctx.cache[("ml_languages",)]


def dense(ctx: RecallContext, query: str, n: int, where: str | None = None) -> list[list[dict]]:
    """The n chunks nearest the query by e5 cosine, one ranked list per chunk language.

    One list per language, because the small e5 model prefers its query's language: a Chinese
    question scores unrelated Chinese chunks (~0.83) above the English paragraph that answers it
    (~0.82). Fused by rank, the best chunk of each language gets a fair place."""
    q = query_vector(ctx, query)
    scope = f" AND ({where})" if where else ""  # the documents the query is routed to
    return [ctx.store.vector_search(TABLE, q, n, where=f"language = {sql_str(lang)}{scope}",
                                    columns=COLUMNS) for lang in languages(ctx)]


def dense_scores(ctx: RecallContext, query: str, rows: list[dict]) -> np.ndarray:
    """One dense score per chunk row: the calibrated e5 cosine for a chunk that has an e5
    vector, else the SBERT cosine (0 when the query is Chinese: SBERT cannot judge); then
    shifted so that the best chunk of every language (and of the SBERT-scored rest) scores as
    the best overall, for the language preference `dense` explains."""
    ids = [r["chunk_id"] for r in rows]
    found = ctx.store.rows(TABLE, f"chunk_id IN ({', '.join(sql_str(i) for i in ids)})",
                           ["chunk_id", "vector", "language"]) if ids else []
    e5 = {r["chunk_id"]: (np.asarray(r["vector"], np.float32), r["language"]) for r in found}
    q_e5 = query_vector(ctx, query)  # (384,)
    use_sbert = sbert_understands(query)
    q_sbert = ctx.query_vector(query) if use_sbert else None
    out = np.zeros(len(rows), np.float32)  # (P,)
    group = []
    for i, row in enumerate(rows):
        if row["chunk_id"] in e5:
            vec, lang = e5[row["chunk_id"]]
            out[i] = calibrated(float(vec @ q_e5))
            group.append(f"e5:{lang}")
        else:
            out[i] = float(np.asarray(row["vector"], np.float32) @ q_sbert) if use_sbert else 0.0
            group.append("sbert")
    ctx.cache[("ml_groups", query)] = dict(zip(ids, group, strict=True))
    top = float(out.max()) if len(out) else 0.0
    for g in set(group):
        members = [i for i, x in enumerate(group) if x == g]
        if g == "sbert" and not use_sbert:
            continue  # no judgement to lift
        out[members] += top - float(out[members].max())
    return out


def keep_other_language(ctx: RecallContext, query: str, ranked: list[tuple[dict, float]],
                        dense: dict[str, float], k: int) -> list[tuple[dict, float]]:
    """`ranked` with, at rank k, the densest chunk of each other language when none is in the
    top k. Words and BM25 only ever match chunks in the query's own language, so without this
    a Chinese question never shows the English paragraph that answers it; one slot (never the
    first k-1) is the price. `dense`: chunk_id -> `dense_scores` of the pool."""
    groups = ctx.cache.get(("ml_groups", query), {})
    # SBERT-scored chunks count as the question's own for a Chinese one: they have no score
    own = {"sbert", "e5:en", "e5:und"} if sbert_understands(query) else {"sbert", "e5:zh"}
    out = list(ranked)
    for g in sorted({x for x in groups.values()} - own):
        members = [i for i, (row, _) in enumerate(out) if groups.get(row["chunk_id"]) == g]
        if not members or members[0] < k or len(out) < k:
            continue
        best = max(members, key=lambda i: dense.get(out[i][0]["chunk_id"], 0.0))
        row, _ = out.pop(best)
        out.insert(k - 1, (row, out[k - 2][1] if k >= 2 else out[0][1]))
    return out
