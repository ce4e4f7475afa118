"""Stage `kv`: each document prefilled once by the default model, its KV stored in the cold tier.

Every later question over the document (`h3 ask`, the analysis assets) loads this KV instead of
recomputing it. The stored KV is content-keyed by (token ids, model fingerprint, block format), so
a changed document (new doc_id), another model or a new block format finds nothing and recomputes;
the `kv_blocks` table indexes the stored groups per document (removed with the document).
"""


import time

import pyarrow as pa
from dagster import AssetExecutionContext, BackfillPolicy, asset

from assets._batch import per_document, summary_metadata
from assets.partitioning import DOCUMENTS_PARTITIONS
from h3_runtime.reuse.blocks import FORMAT_VERSION
from h3_runtime.reuse.prompt import ChunkText
from h3_runtime.reuse.runtime import ReuseRuntime
from resources.runtime import H3RuntimeResource
from resources.store import ColdStore, ColdStoreResource, sql_str
from resources.store.tables import TableSpec, register_table

KV_BLOCKS = register_table(TableSpec(
    name="kv_blocks",
    description="one row per stored KV group of a document (cold tier index, lineage to chunks)",
    schema=pa.schema([
        pa.field("doc_id", pa.string()),
        pa.field("kv_key", pa.string()),  # content key: token ids + model + block format
        pa.field("model_key", pa.string()),
        pa.field("format_version", pa.int32()),
        pa.field("group", pa.int32()),
        pa.field("token_start", pa.int32()),
        pa.field("token_end", pa.int32()),
        pa.field("bytes", pa.int64()),
        pa.field("crc32", pa.int64()),
        pa.field("chunks", pa.int32()),  # chunks of the document covered by the stored KV
        pa.field("created_at", pa.float64()),
    ]),
))


def document_chunks(db: ColdStore, doc_id: str) -> list[ChunkText]:
    """The document's chunks from the cold store, in reading order (chunk ids end in :c<i>)."""
    rows = db.rows("chunks", f"doc_id = {sql_str(doc_id)}", ["chunk_id", "page", "text"])

    def order(row: dict) -> int:
        tail = row["chunk_id"].rsplit(":c", 1)[-1]
        return int(tail) if tail.isdigit() else 0

    return [ChunkText(r["chunk_id"], int(r["page"]), r["text"]) for r in sorted(rows, key=order)]


def fit_chunks(runtime: ReuseRuntime, chunks: list[ChunkText], max_tokens: int) -> list[ChunkText]:
    """The longest run of leading chunks whose prompt layout fits `max_tokens` (the model's
    trained context minus room for a question and an answer)."""
    total = len(runtime.layout.head_ids)
    kept = []
    for chunk in chunks:
        total += len(runtime.layout.chunk_ids(chunk))
        if total > max_tokens:
            break
        kept.append(chunk)
    return kept


def max_document_tokens(runtime: ReuseRuntime, reserve: int = 512) -> int:
    return int(getattr(runtime.model.config, "max_position_embeddings", 8192)) - reserve


def precompute_one(runtime: ReuseRuntime, db: ColdStore, doc_id: str) -> dict:
    """Stores one document's KV (if not stored yet) and indexes it in `kv_blocks`."""
    chunks = document_chunks(db, doc_id)
    if not chunks:
        raise ValueError(f"document {doc_id}: no chunks in the cold store (ingest it first)")
    kept = fit_chunks(runtime, chunks, max_document_tokens(runtime))
    meta, computed = runtime.precompute(doc_id, kept)
    if computed or not db.rows("kv_blocks", f"kv_key = {sql_str(meta.key)}", ["kv_key"], 1):
        db.delete_where("kv_blocks", f"doc_id = {sql_str(doc_id)}")
        now, bpt = time.time(), meta.bytes_per_token
        db.add("kv_blocks", [{
            "doc_id": doc_id, "kv_key": meta.key, "model_key": meta.model_key,
            "format_version": FORMAT_VERSION, "group": g,
            "token_start": g * meta.group_tokens,
            "token_end": min((g + 1) * meta.group_tokens, meta.tokens),
            "bytes": (min((g + 1) * meta.group_tokens, meta.tokens) - g * meta.group_tokens) * bpt,
            "crc32": meta.crc32[g], "chunks": len(kept), "created_at": now,
        } for g in range(meta.groups)])
    return {"status": "ok", "kv_key": meta.key, "tokens": meta.tokens, "bytes": meta.nbytes,
            "seconds": meta.seconds if computed else 0.0, "computed": computed,
            "chunks_covered": len(kept), "chunks_total": len(chunks)}


@asset(partitions_def=DOCUMENTS_PARTITIONS, group_name="kv", kinds={"torch"}, io_manager_key="staging_io",
       backfill_policy=BackfillPolicy.single_run(), code_version=f"kv-format-{FORMAT_VERSION}",
       deps=["cold_store"],  # lineage: the chunks as stored (ingestion's last stage)
       description="The default model's KV of each document (head + chunks), prefilled once and "
                   "stored checksummed in the cold tier; later questions load it.")
def document_kv(context: AssetExecutionContext, store: ColdStoreResource,
                h3_runtime: H3RuntimeResource) -> dict:
    db = store.get_store()
    runtime = h3_runtime.get_runtime()

    def one(doc_id: str) -> dict:
        doc = db.get_document(doc_id)
        if doc is None or doc.get("status") != "ok":
            reason = "not in the cold store" if doc is None else doc.get("reason") or "not ok"
            return {"status": "failed", "reason": f"document {doc_id}: {reason}",
                    "source": (doc or {}).get("source")}
        return {"source": doc.get("source"), **precompute_one(runtime, db, doc_id)}

    results = per_document(context, one)
    ok = [p for p in results.values() if p.get("status") == "ok"]
    meta = summary_metadata(results, preview=[
        {"doc_id": d, "tokens": p.get("tokens", 0), "MB": round(p.get("bytes", 0) / 1e6, 1),
         "prefill_s": p.get("seconds", 0.0), "computed": p.get("computed"),
         "chunks": f"{p.get('chunks_covered', 0)}/{p.get('chunks_total', 0)}",
         "status": p["status"]} for d, p in results.items()])
    meta.update({"tokens": sum(p["tokens"] for p in ok), "bytes": sum(p["bytes"] for p in ok),
                 "prefill_seconds": round(sum(p["seconds"] for p in ok), 3),
                 "cold_tier_bytes": runtime.store.usage_bytes(),
                 "model_key": runtime.model_key, "format_version": FORMAT_VERSION})
    context.add_output_metadata(meta)
    return results
