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

from resources.models.multilingual import calibrated, get_multilingual
from resources.recall.router import RecallContext
from resources.store.base import sql_str
from resources.text_lang import ZH, detect_language

TABLE = "chunks_ml"
COLUMNS = ["doc_id", "chunk_id", "page", "bbox", "text", "kind", "section", "vector"]


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


def dense(ctx: RecallContext, query: str, n: int) -> list[dict]:
    """The n chunks nearest the query by e5 cosine (rows like `chunks` rows, e5 `vector`)."""
    return ctx.store.vector_search(TABLE, query_vector(ctx, query), n, columns=COLUMNS)


def dense_scores(ctx: RecallContext, query: str, rows: list[dict]) -> np.ndarray:
    """One dense score per chunk row on SBERT's scale: the calibrated e5 cosine for a chunk that
    has an e5 vector, else the SBERT cosine (0 when the query is Chinese: SBERT cannot judge)."""
    ids = [r["chunk_id"] for r in rows]
    found = ctx.store.rows(TABLE, f"chunk_id IN ({', '.join(sql_str(i) for i in ids)})",
                           ["chunk_id", "vector"]) if ids else []
    e5 = {r["chunk_id"]: np.asarray(r["vector"], np.float32) for r in found}
    q_e5 = query_vector(ctx, query)  # (384,)
    use_sbert = sbert_understands(query)
    q_sbert = ctx.query_vector(query) if use_sbert else None
    out = np.zeros(len(rows), np.float32)  # (P,)
    for i, row in enumerate(rows):
        if row["chunk_id"] in e5:
            out[i] = calibrated(float(e5[row["chunk_id"]] @ q_e5))
        elif use_sbert:
            out[i] = float(np.asarray(row["vector"], np.float32) @ q_sbert)
    return out
