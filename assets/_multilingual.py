"""Per-chunk language, the full-text form of a chunk, and the multilingual vectors of the chunks
`cold_storage.multilingual_embedding` selects (resources/models/multilingual.py says why a second
model and how it stays unloaded for English)."""

from __future__ import annotations

import time

from resources.models.multilingual import get_multilingual, wants_vector
from resources.text_lang import detect_language, document_language, fts_form


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
