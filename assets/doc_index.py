"""Stage: document vectors (1024-d, from the chunk summaries) and their FAISS index
(`hbf.ann_index_type`: IVF_PQ, or HNSW; exact search when the corpus is too small to train),
with index size, build time, query latency and recall against exact search in metadata."""

import json
import time
from collections import defaultdict

import numpy as np
from dagster import (
    AssetCheckResult,
    AssetCheckSeverity,
    AssetExecutionContext,
    Failure,
    MaterializeResult,
    MetadataValue,
    asset,
    asset_check,
)

from h3.assets.pooling import chunk_pooling
from h3.resources.semantic.artifacts import index_path
from h3.resources.semantic.doc_index import build_index, document_vector, measure, save_index
from h3.resources.settings import load_config
from h3.resources.store import DocumentStoreResource
from h3.resources.store.tables import CHUNK_SUMMARIES


@asset(group_name="compression", kinds={"faiss"}, deps=[chunk_pooling],
       description="1024-d document vectors and their FAISS index under $H3_HOME/semantic.")
def doc_index(context: AssetExecutionContext, store: DocumentStoreResource) -> MaterializeResult:
    db = store.get_store()
    by_doc: dict[str, list] = defaultdict(list)
    for r in db.rows(CHUNK_SUMMARIES.name, None, ["doc_id", "vector"]):
        by_doc[r["doc_id"]].append(r["vector"])
    ok = db.ok_doc_ids()
    doc_ids = sorted(d for d in by_doc if d in ok)
    if not doc_ids:
        raise Failure(description="doc_index: no chunk summaries (materialise chunk_pooling)")
    vectors = np.stack([document_vector(np.asarray(by_doc[d], np.float32))
                        for d in doc_ids])  # (N_docs, 1024)
    requested = load_config().hbf.ann_index_type
    t0 = time.perf_counter()
    index, kind, note = build_index(vectors, requested)
    report = measure(index, vectors, kind, requested, time.perf_counter() - t0, note)
    save_index(index, index_path(), doc_ids)
    context.log.info(f"doc_index: {kind} over {len(doc_ids)} documents, {report.bytes} bytes, "
                     f"{report.query_ms:.3f} ms a query")
    return MaterializeResult(metadata={
        "documents": len(doc_ids), "dim": int(vectors.shape[1]), "index": kind,
        "requested": requested, "index_bytes": report.bytes,
        "build_seconds": report.build_seconds, "query_ms": report.query_ms,
        "recall_at_10_vs_exact": round(report.recall_at_10_vs_exact, 4),
        "note": note or "-", "artifact": str(index_path()),
        "why": MetadataValue.md("IVF_PQ needs enough vectors to train its quantisers; smaller "
                                "corpora use an exact flat index (same answers, tiny size)."),
    })


def textless_doc_ids(db) -> set[str]:
    """Ok documents stored with 0 chunks on purpose: nothing readable in them (vector art only,
    blank or unreadable pages with OCR finding nothing); their metadata says so."""
    out = set()
    for r in db.rows("documents", "status = 'ok'", ["doc_id", "metadata_json"]):
        try:
            counts = json.loads(r["metadata_json"] or "{}").get("counts") or {}
        except ValueError:
            continue
        if counts.get("chunks") == 0:
            out.add(r["doc_id"])
    return out


@asset_check(asset=doc_index, blocking=True,
             description="No ok document lost its chunks (only documents stored without text "
                         "have none), and every ok document with chunks is indexed.")
def every_document_has_chunks(store: DocumentStoreResource) -> AssetCheckResult:
    db = store.get_store()
    ok = db.ok_doc_ids()
    with_chunks = {r["doc_id"] for r in db.rows("chunks", None, ["doc_id"])}
    summarised = {r["doc_id"] for r in db.rows(CHUNK_SUMMARIES.name, None, ["doc_id"])}
    no_chunks = sorted(ok - with_chunks - textless_doc_ids(db))
    not_indexed = sorted((ok & with_chunks) - summarised)
    return AssetCheckResult(
        passed=not no_chunks and not not_indexed, severity=AssetCheckSeverity.ERROR,
        metadata={"documents_ok": len(ok), "without_chunks": len(no_chunks),
                  "without_text": len(ok - with_chunks) - len(no_chunks),
                  "not_indexed": len(not_indexed),
                  "examples": ", ".join((no_chunks + not_indexed)[:10]) or "-"})
