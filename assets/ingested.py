"""The last step of an ingestion run: each stored document's partition materialised with its
file name, and the run failed, naming every file that did not make it and why.

Why a step of its own: a run covers many documents (BackfillPolicy.single_run) and every stage
passes a bad document's failure downstream, so that one bad file never stops the others. Dagster
marks a partition Failed when a run that planned it ends failed without materialising it; so
this asset materialises only the partitions whose document is stored (`status = ok` in the
documents table) and then raises if any is not. The run ends Failed (the good documents are
stored and stay), this asset's partitions view shows the bad ones Failed and the good ones
Materialized, and the next successful run of the same file turns its partition Materialized.

Before that, the tables the run wrote are compacted and their older versions pruned
(resources/store/compaction.py): each write of the run kept the files it replaced.
"""

import json
from collections.abc import Iterator
from pathlib import Path

from dagster import (
    AssetExecutionContext,
    AssetMaterialization,
    AssetObservation,
    BackfillPolicy,
    Failure,
    MetadataValue,
    asset,
)

from h3.assets._batch import file_names, markdown_table
from h3.assets.partitioning import DOCUMENTS_PARTITIONS
from h3.ontology.ids import doc_id_of_partition
from h3.resources.settings import load_config
from h3.resources.staging_io import drop_staged
from h3.resources.store import DocumentStore, DocumentStoreResource, sql_str
from h3.resources.store.compaction import compact_tables, compaction_summary, table_rows

PartitionEvent = AssetMaterialization | AssetObservation
# The per-document stages of an ingestion run whose staged JSON is spent once the document is
# stored (every later stage reads the store; `cold_storage.keep_staging` keeps them)
STAGED_BY_INGESTION = ("documents", "layout", "tables", "figures", "ocr", "chunks", "embeddings",
                       "cold_store", "knowledge_graph", "structures", "figure_embeddings",
                       "token_vectors", "sections")
# The tables an ingestion run writes (or, replacing an older version of a file, deletes from)
WRITTEN_BY_INGESTION = ("documents", "regions", "chunks", "chunks_ml", "edges", "entities",
                        "structures", "figure_embeddings", "sections", "cross_checks")


def clear_staging(doc_ids: list[str]) -> int:
    """Deletes the stored documents' staged JSON (unless `cold_storage.keep_staging`); returns
    how many files went. A failed document keeps its staging: a re-run of the failed step reads it."""
    if load_config().cold_storage.keep_staging:
        return 0
    return sum(drop_staged(doc_id, assets=STAGED_BY_INGESTION) for doc_id in doc_ids)


def compact_written_tables(context: AssetExecutionContext, db: DocumentStore) -> AssetObservation:
    """Compacts the tables the run wrote and prunes their old versions; the observation tells
    the run's page what each table held before and after (a table that fails is named there and
    in the log, and fails nothing: the documents are stored either way)."""
    summary = compaction_summary(compact_tables(db, WRITTEN_BY_INGESTION))
    rows = table_rows(summary)
    for row in rows:
        if row["error"]:
            context.log.warning(f"compaction: {row['error']}")
    return AssetObservation(asset_key=context.asset_key, metadata={
        "compaction_bytes_before": summary["bytes_before"],
        "compaction_bytes_after": summary["bytes_after"],
        "compaction_versions_after": summary["versions_after"],
        "compaction_failed_tables": summary["failed"],
        "compaction": MetadataValue.md(markdown_table(rows, max_rows=20)) if rows
        else "no tables yet"})


@asset(partitions_def=DOCUMENTS_PARTITIONS, group_name="ingestion", kinds={"pdf", "lancedb"},
       backfill_policy=BackfillPolicy.single_run(), output_required=False,
       deps=["cold_store", "knowledge_graph", "structures", "figure_embeddings",
             "token_vectors", "sections"],
       description="One partition per document that made it into the store (metadata: its "
                   "file, pages, chunks). A document that did not is Failed here, and the run "
                   "fails naming each such file and the reason; the others are stored anyway.")
def ingested_documents(context: AssetExecutionContext,
                       store: DocumentStoreResource) -> Iterator[PartitionEvent]:
    db = store.get_store()
    keys = {doc_id_of_partition(k): k for k in context.partition_keys}  # doc_id -> key
    rows = {r["doc_id"]: r for r in db.rows(
        "documents", f"doc_id IN ({', '.join(sql_str(k) for k in keys)})",
        ["doc_id", "source", "status", "reason", "pages", "metadata_json"])} if keys else {}
    failed: list[dict] = []
    stored: list[str] = []
    for doc_id, key in keys.items():
        row = rows.get(doc_id) or {"source": None, "status": "missing",
                                   "reason": f"{key}: no row in the store (deleted?)"}
        source = row.get("source") or key
        if row["status"] != "ok":
            reason = row.get("reason") or f"{source}: ingestion did not complete"
            failed.append({"file": Path(source).name, "doc_id": doc_id, "reason": reason})
            # the failed partition's page then names its file and the reason (an observation
            # leaves its status Failed)
            yield AssetObservation(asset_key=context.asset_key, partition=key, metadata={
                "file": Path(source).name, "doc_id": doc_id, "source": source,
                "reason": reason})
            continue
        stored.append(doc_id)
        counts = json.loads(row.get("metadata_json") or "{}").get("counts") or {}
        yield AssetMaterialization(asset_key=context.asset_key, partition=key, metadata={
            "file": Path(source).name, "doc_id": doc_id, "source": source,
            "pages": row.get("pages") or 0, "chunks": counts.get("chunks", 0)})
    clear_staging(stored)
    yield compact_written_tables(context, db)
    if failed:
        # the run page (which a failed partition links to) names the files that failed, and
        # the failure message names each one with its reason
        tags = {"h3/failed_files": file_names([f["file"] for f in failed])}
        if len(keys) == 1:  # a one-document run: its file (as tag_run_with_files sets it)
            tags["h3/file"] = failed[0]["file"]
        context.instance.add_run_tags(context.run_id, tags)
        lines = "; ".join(f["reason"] if f["file"] in f["reason"]
                          else f"{f['file']}: {f['reason']}" for f in failed)
        raise Failure(
            description=f"{len(failed)} of {len(keys)} documents failed (the other "
                        f"{len(keys) - len(failed)} are stored): {lines}"[:2000],
            metadata={"documents_failed": len(failed), "documents_ok": len(keys) - len(failed),
                      "failed_documents": MetadataValue.md(
                          markdown_table(failed, max_rows=100, max_chars=300))},
            allow_retries=False)
