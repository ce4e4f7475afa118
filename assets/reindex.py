"""Stage `reindex`: keeping the document store fast after months of appends and deletes.

Every table's full-text and vector indexes are brought up to date (rows appended since the last
build merged in, the ANN index created once a table is large), then LanceDB compacts the small
fragments that many appends and deletes leave behind and prunes every older table version
(resources/store/compaction.py: each write keeps the previous version's files; without pruning
the store only grows). Run by the re-index schedule (pipelines/schedules.py);
ingestion runs compact the tables they wrote themselves (assets/ingested.py).
"""

import time

from dagster import AssetExecutionContext, MetadataValue, asset

from h3.assets._batch import markdown_table
from h3.resources.store import DocumentStoreResource
from h3.resources.store.compaction import compact_tables, compaction_summary, table_rows


@asset(group_name="operations", kinds={"lancedb"}, deps=["cold_store"],
       description="Full-text/ANN indexes refreshed, fragments compacted, old table versions "
                   "pruned, for every cold-store table.")
def store_indexes(context: AssetExecutionContext, store: DocumentStoreResource) -> dict:
    db = store.get_store()
    t0 = time.perf_counter()
    names = db.table_names()
    indexes = {name: db.ensure_indexes(name) for name in names}
    summary = compaction_summary(compact_tables(db, names))
    rows = [{"table": r["table"], "rows": db.count_rows(r["table"]),
             "indexes": ", ".join(f"{c}: {v}" for c, v in indexes[r["table"]].items())
             or "up to date", **r}
            for r in table_rows(summary)]
    for row in rows:
        if row["error"]:
            context.log.warning(f"compaction: {row['error']}")
    context.add_output_metadata({
        "tables": len(rows), "seconds": round(time.perf_counter() - t0, 3),
        "bytes_before": summary["bytes_before"], "bytes_after": summary["bytes_after"],
        "failed_tables": summary["failed"],
        "by_table": MetadataValue.md(markdown_table(rows, max_rows=50)) if rows else "no tables yet",
    })
    return {"tables": len(rows), "bytes_before": summary["bytes_before"],
            "bytes_after": summary["bytes_after"]}
