"""`h3 bench --scenario scale [--home H3_HOME]`: the document store at 10K, 100K and 1M chunks.

The chunks are the real chunks of a store that holds the development filings (`--home`, default
$H3_HOME; read only), repeated with new document and chunk ids until the table holds N rows. The
first copy is the store's own; every further copy keeps the text and gets its vectors perturbed:
v' = normalise(v + e), e ~ N(0, (NOISE / sqrt(d))^2 I) in float32 (|e| ~ NOISE: cosine ~0.94 to
the original), so no two rows share a vector and ANN ties stay rare. No re-embedding: 1M SBERT
passes would take hours on two cores. The documents table is repeated the same way (one row per
copy of a document); regions, structures, entities and edges are copied once, so auto mode's
structure and relation intents search tables of the development store's own size.

Per size, with the product's own code (LanceDocumentStore, `ensure_indexes`, `recall`):
- build: seconds to write the rows, to build the full-text index (and the doc_id B-tree) and
  each ANN index;
- bytes per chunk on disk (the chunks table: data, full-text, ANN and doc_id indexes) and the
  process's resident memory growth from opening the store to the end of the warm queries;
- recall latency p50/p95 (ms), text and auto modes, warm (one pass first, timed second pass);
- agreement of the ANN's top 10 with exact search (numpy, cosine) for every question's vector.
IVF_SQ, IVF_PQ and HNSW (`hbf.ann_index_type`) side by side on the same table, and at the middle size
IVF_PQ with Lance's own parameters as well ("IVF_PQ_lance_defaults": the store before the
parameters were set per table size). Below `ANN_MIN_ROWS` the product searches exactly (no ANN).
Questions: the development set's questions, reported per half (tune / check) and all.
"""

from __future__ import annotations

import gc
import json
import math
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from benchmarks.documents.split import HALVES, half_of, halves
from h3.pipelines.cli.output import log
from h3.resources.store.lance import ANN_MIN_ROWS, LanceDocumentStore

SIZES = (10_000, 100_000, 1_000_000)
QUICK_SIZES = (5_000, 25_000, 30_000)
NOISE = 0.35  # norm of a copy's vector perturbation (unit vectors)
K = 10
SEED = 0
COPIED_ONCE = ("regions", "structures", "entities", "edges")
WRITE_BATCH = 200_000  # rows per Lance append (one fragment each)
ANN_VARIANTS = ("IVF_SQ", "IVF_PQ", "HNSW")  # hbf.ann_index_type's choices


class _FullTextFirst(LanceDocumentStore):
    """Builds the tables' full-text indexes only: each variant then builds its own ANN index."""

    def create_ann_index(self, table: str) -> str:
        return "ann deferred to the variants"


class LanceDefaultsStore(LanceDocumentStore):
    """The store as it was before the ANN parameters grew with the table: Lance's defaults at
    build and at query time (the before column of the 1M comparison)."""

    def ann_build_params(self, rows: int, dim: int) -> dict:
        return {}

    def ann_search_params(self, rows: int, k: int = 10) -> dict:
        return {}


def run(out_dir: Path, quick: bool, home: str | None = None) -> dict:
    from benchmarks.documents.filings import _jsonl, corpus_dir
    from h3_runtime.home import h3_home

    source = Path(home).expanduser().resolve() if home else h3_home(create=False)
    if not (source / "lancedb" / "chunks.lance").is_dir():
        raise FileNotFoundError(f"{source}: no document store with chunks (lancedb/chunks.lance)")
    tables = read_source(source / "lancedb")
    questions = _jsonl(corpus_dir() / "questions.jsonl")
    split = halves(q["file"] for q in questions)
    sizes = QUICK_SIZES if quick else SIZES
    work = Path(tempfile.mkdtemp(prefix="h3-scale-bench-"))
    rows = []
    try:
        for n in sizes:
            # the before column at the middle size: Lance's defaults build ~3x slower, and
            # two more 1M builds would not fit the bench's 15 minutes on two shared cores
            rows.append(measure_size(tables, n, work / f"n{n}", questions, split,
                                     before=n == sizes[-2] and n >= ANN_MIN_ROWS))
            (Path(out_dir) / "scale.partial.json").write_text(json.dumps(rows, indent=1))
            shutil.rmtree(work / f"n{n}", ignore_errors=True)
            gc.collect()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    report = {"source_home": str(source), "source_chunks": tables["chunks"].num_rows,
              "perturbation": f"copies 2.. : normalise(v + N(0, ({NOISE}/sqrt(d))^2)), float32; "
                              "text repeated, new doc and chunk ids",
              "questions": {h: sum(half_of(q["file"], split) == h for q in questions)
                            for h in HALVES},
              "k": K, "sizes": list(sizes), "rows": rows,
              "targets": targets(rows[-1]) if rows[-1]["chunks"] >= 1_000_000 else None}
    (Path(out_dir) / "scale.partial.json").unlink(missing_ok=True)  # (the report has it all)
    from benchmarks.runtime.plots import plot_corpus_scale

    report["plot"] = str(plot_corpus_scale(rows, Path(out_dir) / "scale.png"))
    return report


def read_source(lancedb_dir: Path) -> dict[str, pa.Table]:
    """The source store's tables as Arrow (read only: lancedb.connect writes nothing)."""
    import lancedb

    db = lancedb.connect(str(lancedb_dir))
    names = set(getattr(db.list_tables(), "tables", None) or db.list_tables())
    return {name: db.open_table(name).to_arrow()
            for name in ("chunks", "documents", *COPIED_ONCE) if name in names}


def scaled_chunks(chunks: pa.Table, n: int, rng: np.random.Generator):
    """Yields Arrow batches of the chunks table repeated up to n rows (module docstring)."""
    base = np.asarray(chunks.column("vector").combine_chunks().values, np.float32)
    base = base.reshape(chunks.num_rows, -1)
    dim = base.shape[1]
    doc_ids = chunks.column("doc_id").to_pylist()
    chunk_ids = chunks.column("chunk_id").to_pylist()
    copies = math.ceil(n / chunks.num_rows)
    pending, count = [], 0
    for copy in range(copies):
        take = min(chunks.num_rows, n - copy * chunks.num_rows)
        part = chunks.slice(0, take)
        if copy:
            vectors = base[:take] + rng.standard_normal((take, dim), np.float32) * (NOISE / math.sqrt(dim))
            vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
            suffix = f"~s{copy}"
            docs = [d + suffix for d in doc_ids[:take]]
            ids = [d + c[len(o):] for d, c, o in zip(docs, chunk_ids[:take], doc_ids[:take],
                                                     strict=True)]
            field = chunks.schema.field("vector")
            part = part.set_column(part.schema.get_field_index("vector"), field,
                                   pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel()), dim))
            part = part.set_column(part.schema.get_field_index("doc_id"), "doc_id", pa.array(docs))
            part = part.set_column(part.schema.get_field_index("chunk_id"), "chunk_id", pa.array(ids))
        pending.append(part)
        count += take
        if count >= WRITE_BATCH or copy == copies - 1:
            yield pa.concat_tables(pending)
            pending, count = [], 0


def scaled_documents(documents: pa.Table, copies: int) -> pa.Table:
    parts = [documents]
    for copy in range(1, copies):
        ids = [d + f"~s{copy}" for d in documents.column("doc_id").to_pylist()]
        parts.append(documents.set_column(0, "doc_id", pa.array(ids)))
    return pa.concat_tables(parts)


def build_store(tables: dict[str, pa.Table], n: int, path: Path, store_cls=LanceDocumentStore,
                ann_type: str = "IVF_PQ") -> tuple[LanceDocumentStore, np.ndarray, dict]:
    """Writes the scaled tables under `path`; returns the store, the chunk vectors (for exact
    search, in table order) and the seconds each step took."""
    store = store_cls(path, ann_type)
    rng = np.random.default_rng(SEED)
    t0 = time.perf_counter()
    handle = store._open("chunks", create=True)
    vectors, doc_ids = [], set()
    for batch in scaled_chunks(tables["chunks"], n, rng):
        handle.add(batch.select(handle.schema.names).cast(handle.schema))
        doc_ids.update(batch.column("doc_id").to_pylist())
        vectors.append(np.asarray(batch.column("vector").combine_chunks().values,
                                  np.float32).reshape(batch.num_rows, -1))
    copies = math.ceil(n / tables["chunks"].num_rows)
    documents = scaled_documents(tables["documents"], copies)
    with_chunks = pa.array(sorted(doc_ids))
    documents = documents.filter(pc.is_in(documents.column("doc_id"), with_chunks))  # (last copy)
    for name, table in (("documents", documents),
                        *((name, tables[name]) for name in COPIED_ONCE if name in tables)):
        target = store._open(name, create=True)
        target.add(table.select(target.schema.names).cast(target.schema))
    write_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    for name in ("documents", *COPIED_ONCE):
        store.ensure_indexes(name)
    fts_ann = store.ensure_indexes("chunks")  # full text (+ the ANN index from ANN_MIN_ROWS)
    return store, np.concatenate(vectors), {"write_s": round(write_s, 1),
                                            "index_s": round(time.perf_counter() - t0, 1),
                                            "indexes": fts_ann}


def measure_size(tables: dict, n: int, path: Path, questions: list[dict], split: dict,
                 before: bool) -> dict:
    from h3.resources.models.embedder import get_embedder

    t0 = time.perf_counter()
    store, vectors, built = build_store(tables, n, path, _FullTextFirst)
    log(f"scale: {n} chunks written ({built})")
    row: dict = {"chunks": n, "build": built}
    embed = get_embedder().encode
    qvecs = np.asarray(embed([q["question"] for q in questions]), np.float32)
    exact = exact_top_k(vectors, qvecs, K)
    del vectors
    positions = chunk_positions(store)
    variants = (list(ANN_VARIANTS) if n >= ANN_MIN_ROWS else ["exact"])
    if before:
        variants = ["IVF_PQ_lance_defaults", *variants]
    for variant in variants:
        gc.collect()
        rss0 = rss_bytes()
        probe = variant_store(store, variant, path)
        ann_s = None
        if variant != "exact":
            t1 = time.perf_counter()
            probe.create_ann_index("chunks")
            ann_s = round(time.perf_counter() - t1, 1)
        result = {"ann_build_s": ann_s, **disk_bytes(path, n)}
        result.update(agreement(probe, qvecs, exact, positions, questions, split))
        # the before column: agreement and text latency (auto adds the same intents either way)
        modes = ("text",) if variant == "IVF_PQ_lance_defaults" else ("text", "auto")
        result.update(latencies(probe, questions, split, embed, modes))
        log(f"scale: {n} chunks, {variant}: ANN {ann_s} s, agreement "
            f"{result['agreement_at_10']['all']}, text p50 {result['text_ms']['all']['p50']} ms "
            f"({time.perf_counter() - t0:.0f} s so far)")
        result["memory_growth_bytes_per_chunk"] = round((rss_bytes() - rss0) / n, 1)
        row[variant] = result
    row["wall_s"] = round(time.perf_counter() - t0, 1)
    store._tables.clear()
    return row


def variant_store(store: LanceDocumentStore, variant: str, path: Path) -> LanceDocumentStore:
    if variant == "IVF_PQ_lance_defaults":
        return LanceDefaultsStore(path, "IVF_PQ")
    return LanceDocumentStore(path, "IVF_PQ" if variant == "exact" else variant)


def chunk_positions(store: LanceDocumentStore) -> dict[str, int]:
    ids = [r["chunk_id"] for r in store.rows("chunks", columns=["chunk_id"])]
    return {c: i for i, c in enumerate(ids)}


def exact_top_k(vectors: np.ndarray, queries: np.ndarray, k: int) -> list[np.ndarray]:
    """Row positions of each query's k nearest vectors by cosine (vectors are unit length)."""
    out = []
    for q in queries:
        scores = vectors @ (q / np.linalg.norm(q))
        top = np.argpartition(-scores, k)[:k]
        out.append(top[np.argsort(-scores[top])])
    return out


def agreement(store: LanceDocumentStore, qvecs: np.ndarray, exact: list[np.ndarray],
              positions: dict[str, int], questions: list[dict], split: dict) -> dict:
    """Share of exact search's top K that the store's vector search (ANN where built) returns."""
    per = []
    for q, vec, truth in zip(questions, qvecs, exact, strict=True):
        got = store.vector_search("chunks", vec, K, columns=["chunk_id"])
        found = {positions[r["chunk_id"]] for r in got}
        per.append({"file": q["file"], "share": len(found & set(truth.tolist())) / K})
    return {"agreement_at_10": {h: _mean([r["share"] for r in per if half_of(r["file"], split) == h])
                                for h in HALVES} | {"all": _mean([r["share"] for r in per])}}


def latencies(store: LanceDocumentStore, questions: list[dict], split: dict, embed,
              modes: tuple[str, ...] = ("text", "auto")) -> dict:
    """Recall latency (ms) in text and auto modes: one warm-up pass, then a timed pass with what
    the context remembers of each query forgotten (its vector, routing, hits): each query embeds
    and searches again, while per-document caches (a routed document's chunks, its statement
    pages) stay warm, as in a long-lived process."""
    from h3.resources.recall.router import make_context, recall

    ctx = make_context(store, embed)
    # warm-up in text mode only: auto runs the same text intent (whose per-document caches
    # are then warm) plus the structure and relation intents over their small tables
    recall(store, [q["question"] for q in questions], k=5, mode="text", ctx=ctx)
    out = {}
    for mode in modes:
        times = []
        for q in questions:
            forget_query(ctx, q["question"])
            t0 = time.perf_counter()
            recall(store, [q["question"]], k=5, mode=mode, ctx=ctx)
            times.append((q["file"], 1000 * (time.perf_counter() - t0)))
        out[f"{mode}_ms"] = {h: percentiles([t for f, t in times if half_of(f, split) == h])
                             for h in HALVES} | {"all": percentiles([t for _, t in times])}
    return out


def forget_query(ctx, query: str) -> None:
    for key in [k for k in ctx.cache if k == query or (isinstance(k, tuple) and query in k)]:
        del ctx.cache[key]


def percentiles(values: list[float]) -> dict:
    if not values:
        return {"p50": None, "p95": None}
    values = sorted(values)
    return {"p50": round(statistics.median(values), 1),
            "p95": round(values[min(len(values) - 1, math.ceil(0.95 * len(values)) - 1)], 1)}


def disk_bytes(path: Path, n: int) -> dict:
    """Bytes per chunk of the chunks table on disk: data files, full-text and ANN indexes (the
    latest version's files only: a rebuilt index leaves the old one until cleanup)."""
    import lancedb

    handle = lancedb.connect(str(path)).open_table("chunks")
    sizes = {"fts": 0, "ann": 0, "filter": 0}  # full text, vectors, the doc_id B-tree
    for ix in handle.list_indices():
        kind = ("fts" if ix.index_type == "FTS" else "ann" if "vector" in ix.columns
                else "filter")
        sizes[kind] += _folder_bytes(path / "chunks.lance" / "_indices" / ix.index_uuid)
    data = _folder_bytes(path / "chunks.lance" / "data")
    vectors = n * handle.schema.field("vector").type.list_size * 4
    return {"disk_bytes_per_chunk": {"data": round(data / n), "vectors_float32": round(vectors / n),
                                     "fts_index": round(sizes["fts"] / n),
                                     "ann_index": round(sizes["ann"] / n),
                                     "filter_index": round(sizes["filter"] / n),
                                     "indexes_beyond_data": round(sum(sizes.values()) / n)}}


def _folder_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.exists() else 0


def rss_bytes() -> int:
    import psutil

    return psutil.Process().memory_info().rss


def _mean(values: list[float]) -> float | None:
    return round(sum(values) / len(values), 3) if values else None


def targets(row: dict) -> dict:
    """The issue's targets at 1M chunks, per ANN kind."""
    out = {}
    for variant in ANN_VARIANTS:
        r = row.get(variant)
        if r:
            out[variant] = {"text_p50_ms<=100": r["text_ms"]["all"]["p50"] <= 100,
                            "agreement>=0.95": r["agreement_at_10"]["all"] >= 0.95,
                            "index<=2048_B_per_chunk":
                                r["disk_bytes_per_chunk"]["indexes_beyond_data"] <= 2048}
    return out


if __name__ == "__main__":  # a quick look without the CLI: python -m benchmarks.documents.scale
    print(json.dumps(run(Path(tempfile.mkdtemp()), quick=True), indent=2))
