"""Per-chunk language, the full-text form of a chunk, and the multilingual vectors of the chunks
`cold_storage.multilingual_embedding` selects (resources/models/multilingual.py says why a second
model and how it stays unloaded for English)."""

from __future__ import annotations

import time

from h3.assets._embedding_text import embedding_text
from h3.resources.models.multilingual import get_multilingual, wants_vector
from h3.resources.text_lang import detect_language, document_language, fts_form


def language_columns(text: str) -> dict:
    """The chunk columns derived from its text: `language` and `fts_text`."""
    return {"language": detect_language(text), "fts_text": fts_form(text)}


def multilingual_vectors(texts: dict[str, list[str]], mode: str) -> tuple[dict, float]:
    """{doc_id: {chunk index: vector}} for the chunks `mode` selects, from {doc_id: the texts
    the embedder sees}; and the seconds spent. The model is loaded only if some chunk is
    selected."""
    picked = [(d, i, t) for d, ts in texts.items() for i, t in enumerate(ts)
              if wants_vector(mode, detect_language(t))]
    out: dict[str, dict[int, list[float]]] = {d: {} for d in texts}
    if not picked:
        return out, 0.0
    t0 = time.perf_counter()
    vectors = get_multilingual().passages([t for _, _, t in picked])  # (N, 384)
    for (d, i, _), vec in zip(picked, vectors, strict=True):
        out[d][i] = [round(float(x), 6) for x in vec]
    return out, time.perf_counter() - t0


def ml_rows(chunk_rows: list[dict], vectors: dict) -> list[dict]:
    """`chunks_ml` rows of one document: its chunks that have a multilingual vector (`vectors`:
    {chunk index (int or str after a JSON round trip): vector})."""
    by_index = {int(i): v for i, v in (vectors or {}).items()}
    keep = ("doc_id", "chunk_id", "page", "bbox", "text", "section", "kind", "language")
    return [{**{c: row.get(c) for c in keep}, "vector": by_index[i]}
            for i, row in enumerate(chunk_rows) if i in by_index]


def language_of(chunk_rows: list[dict]) -> str:
    """The document's language from its chunks (zh, en, mixed, und)."""
    return document_language([r["text"] for r in chunk_rows])


BACKFILL_BATCH = 256  # chunks per encode + write: a crash keeps what was written before it
CHUNK_COLUMNS = ["doc_id", "chunk_id", "page", "bbox", "text", "section", "kind", "language"]


def corpus_is_multilingual(store) -> bool:
    """Whether the store holds a Chinese chunk with an e5 vector (one row read)."""
    return bool(store.rows("chunks_ml", "language = 'zh'", ["chunk_id"], limit=1))


def chunks_without_vectors(store, mode: str) -> list[dict]:
    """The stored chunks of good documents that `mode` wants an e5 vector for and that have none:
    under "auto", every such chunk once the corpus is multilingual (English ones, ingested before
    the first Chinese document or beside it); under "all", every such chunk (e.g. after switching
    to it); nothing under "non_english"/"off". An English-only corpus costs one row read."""
    if mode not in ("auto", "all") or (mode == "auto" and not corpus_is_multilingual(store)):
        return []
    have = {r["chunk_id"] for r in store.rows("chunks_ml", None, ["chunk_id"])}
    ok = store.ok_doc_ids()
    return [r for r in store.rows("chunks", None, CHUNK_COLUMNS)
            if r["doc_id"] in ok and r["chunk_id"] not in have]


def backfill_vectors(store, mode: str, log=print) -> dict:
    """Gives the chunks of `chunks_without_vectors` their e5 vectors in `chunks_ml`, in batches.
    Idempotent: a second call finds nothing to do. Returns counts and seconds."""
    todo = chunks_without_vectors(store, mode)
    t0, added = time.perf_counter(), 0
    for start in range(0, len(todo), BACKFILL_BATCH):
        batch = todo[start:start + BACKFILL_BATCH]
        vectors = get_multilingual().passages([embedding_text(r) for r in batch])  # (B, 384)
        added += store.add("chunks_ml", [{**r, "vector": [float(x) for x in v]}
                                          for r, v in zip(batch, vectors, strict=True)])
        log(f"multilingual_vectors: {added}/{len(todo)} chunks")
    seconds = time.perf_counter() - t0
    return {"mode": mode, "multilingual_corpus": mode == "all" or bool(todo)
            or corpus_is_multilingual(store), "chunks_added": added,
            "documents": len({r["doc_id"] for r in todo}), "seconds": round(seconds, 2),
            "chunks_per_s": round(added / seconds, 1) if added and seconds else 0.0}
