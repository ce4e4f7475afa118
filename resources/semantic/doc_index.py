"""Document vectors (1024-d) and their FAISS index.

A document's vector is [mean of its chunk summaries ; element-wise max of them] (512 + 512),
L2-normalised: the mean says what the document is mostly about, the max keeps a strong minority
topic visible. The index follows `hbf.ann_index_type`: IVF_SQ (8-bit scalar codes), IVF_PQ or
HNSW, and exact inner-product search when the corpus is too small to train an IVF's lists.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

DOC_DIM = 1024
PQ_SUBQUANTIZERS = 64  # 1024 / 64 = 16 dims per code
PQ_BITS = 8
# IVF_PQ trains 2**PQ_BITS centroids per subquantiser and ~39 points per IVF list at least.
MIN_TRAIN_IVF_PQ = 2 ** PQ_BITS * 4


def document_vector(summaries: np.ndarray) -> np.ndarray:
    """(N_chunks, 512) unit rows -> (1024,) unit vector."""
    if summaries.ndim != 2 or summaries.shape[0] == 0:
        raise ValueError("document_vector: a document needs at least one chunk summary")
    v = np.concatenate([summaries.mean(axis=0), summaries.max(axis=0)])  # (1024,)
    return (v / max(float(np.linalg.norm(v)), 1e-12)).astype(np.float32)


def query_vector(summary: np.ndarray) -> np.ndarray:
    """A query's 512-d summary in document space: a one-chunk document."""
    return document_vector(summary.reshape(1, -1))


@dataclass
class IndexReport:
    kind: str  # IVF_SQ | IVF_PQ | HNSW | exact
    requested: str
    n_vectors: int
    bytes: int
    build_seconds: float
    query_ms: float  # mean latency of one k=10 query
    recall_at_10_vs_exact: float
    note: str = ""


def build_index(vectors: np.ndarray, requested: str = "IVF_SQ", seed: int = 0):
    """(N, 1024) unit float32 -> (faiss index over inner product, kind used, note)."""
    import faiss

    n, d = vectors.shape
    faiss.omp_set_num_threads(1)  # 2 shared cores: threads only add noise at this size
    if requested == "HNSW":
        index = faiss.IndexHNSWFlat(d, 32, faiss.METRIC_INNER_PRODUCT)
        index.add(vectors)
        return index, "HNSW", ""
    if n < MIN_TRAIN_IVF_PQ:
        index = faiss.IndexFlatIP(d)
        index.add(vectors)
        return index, "exact", (f"{n} documents < {MIN_TRAIN_IVF_PQ} needed to train {requested}: "
                                f"exact search (a flat scan of {n} vectors is sub-millisecond)")
    nlist = max(1, min(int(np.sqrt(n)), n // 39))
    quantizer = faiss.IndexFlatIP(d)
    if requested == "IVF_SQ":
        index = faiss.IndexIVFScalarQuantizer(quantizer, d, nlist, faiss.ScalarQuantizer.QT_8bit,
                                              faiss.METRIC_INNER_PRODUCT)
        note = f"nlist={nlist}, 8-bit codes"
    else:
        index = faiss.IndexIVFPQ(quantizer, d, nlist, PQ_SUBQUANTIZERS, PQ_BITS,
                                 faiss.METRIC_INNER_PRODUCT)
        index.pq.cp.seed = seed
        note = f"nlist={nlist}, m={PQ_SUBQUANTIZERS}"
    index.cp.seed = seed
    index.train(vectors)
    index.add(vectors)
    index.nprobe = min(nlist, 8)
    return index, requested if requested == "IVF_SQ" else "IVF_PQ", f"{note}, nprobe={index.nprobe}"


def measure(index, vectors: np.ndarray, kind: str, requested: str, build_seconds: float,
            note: str = "", n_queries: int = 50, k: int = 10) -> IndexReport:
    """Latency and recall@10 against exact search, querying with the corpus's own vectors."""
    import faiss

    queries = vectors[: min(n_queries, len(vectors))]
    k = min(k, len(vectors))
    t0 = time.perf_counter()
    for q in queries:
        index.search(q.reshape(1, -1), k)
    query_ms = (time.perf_counter() - t0) * 1000 / max(1, len(queries))
    exact = faiss.IndexFlatIP(vectors.shape[1])
    exact.add(vectors)
    _, truth = exact.search(queries, k)
    _, got = index.search(queries, k)
    hits = sum(len(set(t) & set(g)) for t, g in zip(truth, got, strict=True))
    size = int(faiss.serialize_index(index).nbytes)
    return IndexReport(kind, requested, len(vectors), size, round(build_seconds, 4),
                       round(query_ms, 4), hits / max(1, truth.size), note)


def save_index(index, path: Path, doc_ids: list[str]) -> None:
    import json

    import faiss

    path.parent.mkdir(parents=True, exist_ok=True)
    faiss.write_index(index, str(path))
    path.with_suffix(".ids.json").write_text(json.dumps(doc_ids))


def load_index(path: Path):
    """(faiss index, doc_ids in index order)."""
    import json

    import faiss

    if not path.exists():
        raise FileNotFoundError(f"{path}: no document index (materialise doc_index first)")
    return faiss.read_index(str(path)), json.loads(path.with_suffix(".ids.json").read_text())
