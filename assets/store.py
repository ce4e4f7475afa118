"""Stage 8: write each document into the LanceDB document store, then make it visible.

Order matters: the document's old rows are cleared, its regions and chunks (+ vectors) written,
and only then its `documents` row flips to status "ok" (recall filters on it). An older version
of the same source file (same path, other bytes) is then deleted from every table.
"""


import json
import time

from dagster import AssetExecutionContext

from h3.assets._batch import document_done, summary_metadata
from h3.assets._multilingual import language_columns, language_of, ml_rows
from h3.assets.partitioning import delete_document_partitions, document_asset
from h3.ontology.ids import doc_id_of_partition
from h3.ontology.records import (
    ChunksRecord,
    DocumentRecord,
    EmbeddingsRecord,
    StageFailure,
    StoredRecord,
    read_payload,
)
from h3.resources.store import DocumentStore, DocumentStoreResource, sql_str
from h3.resources.store.deletion import purge_document


def _document_row(doc_id: str, doc: DocumentRecord | StageFailure, source: str | None,
                  status: str, reason: str | None, counts: dict,
                  warnings: tuple[str, ...] = ()) -> dict:
    """The `documents` row: what recall filters on and `h3 list` shows. A document that failed
    before its first stage finished has no record of its own: only its id and path are known."""
    full = doc if isinstance(doc, DocumentRecord) else None
    meta = dict(full.metadata) if full else {}
    meta["counts"] = counts
    meta["warnings"] = list(warnings)
    if full and full.profile:  # issuer, aliases, form type, fiscal period (resources/nlp/issuer.py)
        meta["profile"] = full.profile
    return {"doc_id": doc_id, "source": source,
            "content_hash": full.content_hash if full else None, "status": status,
            "reason": reason, "pages": full.pages if full else None,
            "title": full.title if full else None,
            "metadata_json": json.dumps(meta, ensure_ascii=False),
            "bytes": full.bytes if full else None, "updated_at": time.time()}


def write_document(store: DocumentStore, doc_id: str, doc: DocumentRecord | StageFailure,
                   chunked: ChunksRecord | StageFailure,
                   vectors: EmbeddingsRecord | StageFailure) -> StoredRecord | StageFailure:
    """Stores one document (ok or failed); returns what it wrote. Idempotent per doc_id."""
    registered = store.get_document(doc_id) or {}
    # the registered path wins: a payload that failed early names the document by its id
    source = registered.get("source") or doc.source
    store.delete_document(doc_id, keep_documents_row=True)
    failure = next((p for p in (doc, chunked, vectors) if isinstance(p, StageFailure)), None)
    if failure is not None:
        store.upsert_document(_document_row(doc_id, doc, source, "failed", failure.reason, {}))
        return StageFailure(reason=failure.reason, source=source)
    regions = [r.to_json() for r in chunked.regions]
    chunk_rows = [{**c.to_json(), "vector": list(v), **language_columns(c.text)}
                  for c, v in zip(chunked.chunks, vectors.vectors, strict=True)]
    stored = StoredRecord(source=source, pages=doc.pages, regions=store.add("regions", regions),
                          chunks=store.add("chunks", chunk_rows),
                          chunks_ml=(store.add("chunks_ml", ml_rows(chunk_rows,
                                                                    vectors.vectors_ml))
                                     if vectors.vectors_ml else None))  # non-English chunks
    store.upsert_document({**_document_row(doc_id, doc, source, "ok", None, stored.counts(),
                                           chunked.warnings),
                           "language": language_of(chunk_rows)})
    return stored


def replace_older_versions(store: DocumentStore, doc_id: str, source: str,
                           keep_ok: bool = False) -> list[str]:
    """Deletes every other document registered for the same source path (with `keep_ok`, only
    the failed ones); returns their ids. A new version that failed keeps the last good one: a
    file overwritten by a broken copy must not take its searchable content with it."""
    rows = store.rows("documents", f"source = {sql_str(source)}", ["doc_id", "status"])
    older = [r["doc_id"] for r in rows
             if r["doc_id"] != doc_id and not (keep_ok and r["status"] == "ok")]
    for old in older:  # rows, graph nodes only it supported, crops, cold KV (issue 6)
        purge_document(store, old)
    return older


@document_asset(group_name="ingestion", kinds={"lancedb"},
       description="Documents, regions and chunks (+ vectors) in LanceDB; full-text index, ANN "
                   "index once large. A document becomes visible to recall only when complete.")
def cold_store(context: AssetExecutionContext, documents: dict, chunks: dict, embeddings: dict,
               store: DocumentStoreResource) -> dict:
    db = store.get_store()
    results: dict = {}
    t0, cpu0 = time.perf_counter(), time.process_time()
    doc_ids = [doc_id_of_partition(k) for k in context.partition_keys]
    for index, doc_id in enumerate(doc_ids, 1):
        t_doc = time.perf_counter()
        with db.document_lock(doc_id):  # two runs of the same document: one after the other
            written = write_document(db, doc_id, read_payload(documents[doc_id], DocumentRecord),
                                     read_payload(chunks[doc_id], ChunksRecord),
                                     read_payload(embeddings[doc_id], EmbeddingsRecord))
        failed = isinstance(written, StageFailure)
        replaced = (replace_older_versions(db, doc_id, written.source, keep_ok=failed)
                    if written.source else [])
        for old in replaced:
            delete_document_partitions(context.instance, old)
        results[doc_id] = {**written.to_json(), "replaced": replaced}
        document_done(context, doc_ids, index,  # h3 index-build's progress line
                      {**results[doc_id], "stage_seconds": time.perf_counter() - t_doc})
    indexes = {t: db.ensure_indexes(t) for t in ("regions", "chunks", "chunks_ml")}
    wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    for p in results.values():
        p["stage_seconds"] = round(wall / max(len(results), 1), 4)
        p["stage_cpu_seconds"] = round(cpu / max(len(results), 1), 4)
    meta = summary_metadata(results, preview=[
        {"doc_id": k, "source": v.get("source"), "status": v["status"],
         "chunks": v.get("chunks", 0), "reason": v.get("reason") or ""}
        for k, v in results.items()])
    meta.update({f"rows_{t}": n for t, n in db.counts().items()})
    meta["indexes"] = json.dumps({t: v for t, v in indexes.items() if v}) or "{}"
    context.add_output_metadata(meta)
    return results
