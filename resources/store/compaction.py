"""Compacting the document store's tables and pruning their old versions (plain Python, no Dagster).

Every LanceDB write (an append, a delete, an index build) commits a new table version and keeps
the files of the previous ones, so that time travel and readers of older versions still work.
Nothing here reads an older version, so those files only cost disk: after ingesting the 39
development filings, `chunks` held 48 versions and 2.8x its live bytes (224.6 MB for 79.0 MB).
`compact_tables` merges small fragments, folds rows appended since the last index build into
the indexes (as `ensure_indexes` does every 2,000 rows), and deletes every file that only older
versions need, keeping the latest version alone.

Why no window of "recent versions kept": the compaction's own first commit still points at the
files it is replacing, so any window that spares the versions of the last minutes spares those
files too, and the table doubles until the next compaction (measured: 7.4 MB of `chunks`
became 14.6 MB with 30 s kept, 7.2 MB with none).

Why a pruned version never fails a reader: the store opens LanceDB with
read_consistency_interval=0, so every call starts on the latest version; a call that started on
a version pruned under it (the latest a moment before) meets a missing file and runs once more
on the latest version (`lance.with_missing_file_retry`); a write retries the same way
(`with_commit_retries`), and so does a compaction that meets another one. Files a concurrent
writer has written but not yet committed are never touched (LanceDB's `delete_unverified` stays
off). Only code that reads a table with LanceDB itself, outside the store (a benchmark), could
meet a missing file, and only while a compaction runs beside it.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from datetime import timedelta

from h3.resources.store.base import DocumentStore
from h3.resources.store.lance import LanceDocumentStore, with_commit_retries

# Versions younger than this are kept (none: module docstring); read at call time.
KEEP_RECENT = timedelta(0)


@dataclass
class TableCompaction:
    table: str
    bytes_before: int = 0
    bytes_after: int = 0
    versions_before: int = 0
    versions_after: int = 0
    seconds: float = 0.0
    error: str | None = None  # "<table>: <reason>" when this table could not be compacted


def compact_tables(store: DocumentStore, tables: Iterable[str] | None = None,
                   keep_recent: timedelta | None = None) -> list[TableCompaction]:
    """Compacts each named table that exists (default: every table) and prunes its versions
    older than `keep_recent` (default `KEEP_RECENT`); returns what each one held before and after.

    Idempotent: a compacted table with nothing to prune is left as it is. A table that fails is
    reported (its `error`) and the others go on. A store without files (a test double) has
    nothing to compact: []."""
    if not isinstance(store, LanceDocumentStore):
        return []
    keep = KEEP_RECENT if keep_recent is None else keep_recent
    existing = set(store.table_names())
    return [_compact(store, name, keep) for name in (tables or sorted(existing))
            if name in existing]


def _compact(store: LanceDocumentStore, name: str, keep: timedelta) -> TableCompaction:
    done = TableCompaction(name, bytes_before=store.table_bytes(name))
    started = time.perf_counter()
    try:
        handle = store.table(name)
        done.versions_before = len(handle.list_versions())
        with warnings.catch_warnings():  # lancedb warns that a short window can fail readers:
            warnings.simplefilter("ignore", UserWarning)  # the store's retry covers them
            # LanceDB compacts, prunes, then merges new rows into the indexes, which commits one
            # more version after the prune: a second pass (nothing left to compact or index)
            # prunes the version before it
            for _ in range(2):
                # a concurrent writer's commit can conflict with the compaction's: try again
                with_commit_retries(lambda: handle.optimize(cleanup_older_than=keep),
                                    f"compact {name}")
        done.versions_after = len(handle.list_versions())
    except Exception as exc:  # noqa: BLE001 - one bad table never stops the others
        done.error = f"{name}: {type(exc).__name__}: {exc}"[:500]
    done.bytes_after = store.table_bytes(name)
    done.seconds = round(time.perf_counter() - started, 3)
    return done


def compaction_summary(done: list[TableCompaction]) -> dict:
    """Totals and one row per table, for Dagster metadata and the CLI's JSON."""
    return {"tables": len(done), "failed": sum(d.error is not None for d in done),
            "bytes_before": sum(d.bytes_before for d in done),
            "bytes_after": sum(d.bytes_after for d in done),
            "versions_before": sum(d.versions_before for d in done),
            "versions_after": sum(d.versions_after for d in done),
            "by_table": [asdict(d) for d in done]}


def table_rows(summary: dict) -> list[dict]:
    """`compaction_summary`'s tables as rows of a markdown table (MB and versions before and
    after, the error if any), for the Dagster metadata of the assets that compact."""
    return [{"table": r["table"], "MB_before": round(r["bytes_before"] / 1e6, 2),
             "MB_after": round(r["bytes_after"] / 1e6, 2), "versions_before": r["versions_before"],
             "versions_after": r["versions_after"], "error": r["error"] or ""}
            for r in summary["by_table"]]
