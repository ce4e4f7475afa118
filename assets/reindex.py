"""Stage `reindex`: keeping the document store fast after months of appends and deletes.

Every table's full-text and vector indexes are brought up to date (rows appended since the last
build merged in, the ANN index created once a table is large), then LanceDB compacts the small
fragments that many appends and deletes leave behind and prunes table versions older than
`KEEP_VERSIONS` (each write keeps the previous version readable; without pruning the store only
grows). Run by the re-index schedule (pipelines/schedules.py).
"""

import time
from datetime import timedelta

from dagster import AssetExecutionContext, MetadataValue, asset

from h3.assets._batch import markdown_table
from h3.resources.store import DocumentStoreResource

# Old versions kept readable so a long recall that started on one still finishes.
KEEP_VERSIONS = timedelta(days=1)


@asset(group_name="operations", kinds={"lancedb"}, deps=["cold_store"],
       description="Full-text/ANN indexes refreshed, fragments compacted, old table versions "
                   "pruned, for every cold-store table.")
def store_indexes(context: AssetExecutionContext, store: DocumentStoreResource) -> dict:
    from h3.resources.store.lancedb_import import import_lancedb

    lancedb = import_lancedb()

    db = store.get_store()
    # A second connection: compaction is a LanceDB table operation the store does not wrap.
    conn = lancedb.connect(str(db.path))
    rows, t0 = [], time.perf_counter()
    before = db.bytes_on_disk()
    for name in db.table_names():
        started = time.perf_counter()
        indexes = db.ensure_indexes(name)
        stats = conn.open_table(name).optimize(cleanup_older_than=KEEP_VERSIONS)
        compaction = getattr(stats, "compaction", None)
        rows.append({"table": name, "rows": db.count_rows(name),
                     "indexes": ", ".join(f"{c}: {v}" for c, v in indexes.items()) or "up to date",
                     "fragments_removed": getattr(compaction, "fragments_removed", 0),
                     "seconds": round(time.perf_counter() - started, 3)})
    after = db.bytes_on_disk()
    context.add_output_metadata({
        "tables": len(rows), "seconds": round(time.perf_counter() - t0, 3),
        "bytes_before": before, "bytes_after": after,
        "by_table": MetadataValue.md(markdown_table(rows, max_rows=50)) if rows else "no tables yet",
    })
    return {"tables": len(rows), "bytes_before": before, "bytes_after": after}
