"""Stage `kv`: each document prefilled once by the default model, its KV stored in the cold tier.

Every later question over the document (`h3 ask`, the analysis assets) loads this KV instead of
recomputing it. The KV is stored as blocks keyed by the chained hash of the token prefix and the
model fingerprint, so a changed document (new doc_id) or another model finds nothing and
recomputes; the `kv_blocks` table indexes the stored blocks per document (removed with the
document). Everything goes through the `h3_runtime` resource (precompute, stats); KV stored in
the first format (per-document folders) is removed with one log line and prefilled again.
"""


import time

from dagster import AssetExecutionContext

from h3.assets._batch import per_document, summary_metadata
from h3.assets.partitioning import document_asset
from h3.resources.answers import document_chunks
from h3.resources.runtime import KV_FORMAT, H3RuntimeResource
from h3.resources.store import DocumentStore, DocumentStoreResource, sql_str
from h3.resources.store.tables import KV_BLOCKS


def precompute_one(runtime: H3RuntimeResource, db: DocumentStore, doc_id: str) -> dict:
    """Stores one document's KV (if not stored yet) and indexes it in `kv_blocks`."""
    chunks = document_chunks(db, doc_id)
    if not chunks:
        raise ValueError(f"document {doc_id}: no chunks in the document store (ingest it first)")
    kv = runtime.precompute(doc_id, chunks)
    if kv.computed or not db.rows(KV_BLOCKS.name, f"kv_key = {sql_str(kv.kv_key)}", ["kv_key"], 1):
        db.delete_where(KV_BLOCKS.name, f"doc_id = {sql_str(doc_id)}")
        now = time.time()
        db.add(KV_BLOCKS.name, [{
            "doc_id": doc_id, "kv_key": kv.kv_key, "model_key": kv.model_key,
            "format_version": KV_FORMAT, "group": b, "token_start": block["token_start"],
            "token_end": block["token_end"], "bytes": block["bytes"], "crc32": block["crc32"],
            "chunks": kv.chunks_covered, "created_at": now,
        } for b, block in enumerate(kv.blocks)])
    return {"status": "ok", "kv_key": kv.kv_key, "tokens": kv.tokens, "bytes": kv.bytes,
            "seconds": kv.seconds, "computed": kv.computed,
            "chunks_covered": kv.chunks_covered, "chunks_total": kv.chunks_total}


@document_asset(group_name="kv", kinds={"torch"},
       code_version=f"kv-format-{KV_FORMAT}",
       deps=["cold_store"],  # lineage: the chunks as stored (ingestion's last stage)
       description="The default model's KV of each document (head + chunks), prefilled once and "
                   "stored checksummed in the cold tier; later questions load it.")
def document_kv(context: AssetExecutionContext, store: DocumentStoreResource,
                h3_runtime: H3RuntimeResource) -> dict:
    db = store.get_store()
    old = h3_runtime.drop_legacy_kv()
    if old:
        context.log.info(f"document_kv: {old} documents' KV stored in the first format "
                         f"(per-document folders) removed; prefilling them again as blocks")

    def one(doc_id: str) -> dict:
        doc = db.get_document(doc_id)
        if doc is None or doc.get("status") != "ok":
            reason = "not in the document store" if doc is None else doc.get("reason") or "not ok"
            return {"status": "failed", "reason": f"document {doc_id}: {reason}",
                    "source": (doc or {}).get("source")}
        return {"source": doc.get("source"), **precompute_one(h3_runtime, db, doc_id)}

    results = per_document(context, one)
    ok = [p for p in results.values() if p.get("status") == "ok"]
    meta = summary_metadata(results, preview=[
        {"doc_id": d, "tokens": p.get("tokens", 0), "MB": round(p.get("bytes", 0) / 1e6, 1),
         "prefill_s": p.get("seconds", 0.0), "computed": p.get("computed"),
         "chunks": f"{p.get('chunks_covered', 0)}/{p.get('chunks_total', 0)}",
         "status": p["status"]} for d, p in results.items()])
    meta.update({"tokens": sum(p["tokens"] for p in ok), "bytes": sum(p["bytes"] for p in ok),
                 "prefill_seconds": round(sum(p["seconds"] for p in ok), 3),
                 "legacy_documents_removed": old, **h3_runtime.kv_stats()})
    context.add_output_metadata(meta)
    return results
