"""`h3 bench --scenario embedding_engines --home H3_HOME`: the CPU embedding path of issue 12,
side by side on a store the filings bench ingested (`--home` of `--scenario filings`).

Every chunk of the store is encoded in this process by torch's dynamic int8 MiniLM (the CPU path
before issue 12) and by the shipped onnxruntime int8 graph (resources/models/minilm_onnx.py):
CPU seconds, cosine between the two, and page recall@1/@5/MRR of the filings questions
(`H3_FILINGS_CORPUS`) with either vector set for chunks and queries, same store and recall code.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from benchmarks.documents.filings import (
    ProjectedStore,
    _jsonl,
    _text_hits,
    corpus_dir,
    page_rank,
    page_scores,
    without_company,
)
from h3.pipelines.instance import h3_home_env


def _torch_int8_encoder():
    """texts -> (N, 384): the torch int8 model of the embedder, batched as encode batches."""
    from h3.resources.models.embedder import get_embedder

    embedder = get_embedder(precision="int8")

    def encode(texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), embedder.dim), np.float32)
        for picked, ids, mask in embedder._batches(texts):
            out[picked] = embedder.model.embed(ids, mask).float().numpy()  # (B, 384)
        return out

    return encode


def _page_recall(ctx, questions: list[dict]) -> dict:
    out = {}
    for strip in (False, True):
        ranks = [page_rank(_text_hits(ctx, without_company(q["question"], q["company"])
                                      if strip else q["question"], 5, False),
                           q["file"], q["pages"]) for q in questions]
        out["company_removed" if strip else "shipped"] = {**page_scores(ranks), "ranks": ranks}
    return out


def run(out_dir: Path, quick: bool, home: str | None = None) -> dict:
    from h3.assets.embeddings import embedding_text
    from h3.resources.models.embedder import get_embedder
    from h3.resources.recall.router import make_context
    from h3.resources.recall.text import COLUMNS
    from h3.resources.store import open_store

    if not home or not (Path(home) / "lancedb").exists():
        raise ValueError("embedding_engines needs --home: an H3_HOME the filings bench ingested")
    questions = _jsonl(corpus_dir() / "questions.jsonl")
    with h3_home_env(Path(home)):
        store = open_store()
        rows = store.rows("chunks", None, COLUMNS)
        texts = [embedding_text(r) for r in rows]
        torch_encode, onnx_encode = _torch_int8_encoder(), get_embedder(precision="int8").encode
        cpu = {}
        vectors = {}
        for name, encode in (("torch_int8", torch_encode), ("onnx_int8", onnx_encode)):
            encode(texts[:4])  # model load / graph export outside the timing
            t0 = time.process_time()
            vectors[name] = encode(texts)
            cpu[name] = round(time.process_time() - t0, 1)
        cosine = (vectors["torch_int8"] * vectors["onnx_int8"]).sum(axis=1)
        torch_store = ProjectedStore(store, lambda _: vectors["torch_int8"])
        return {"home": home, "chunks": len(rows), "cpu_s": cpu,
                "cosine_torch_vs_onnx": {"min": round(float(cosine.min()), 4),
                                         "mean": round(float(cosine.mean()), 4)},
                "page_recall": {
                    "onnx_int8": _page_recall(make_context(store, onnx_encode), questions),
                    "torch_int8": _page_recall(make_context(torch_store, torch_encode),
                                               questions)}}
