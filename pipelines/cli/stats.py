"""`h3 stats`: row counts of every cold-store table, documents by status, bytes on disk."""

from __future__ import annotations

import argparse


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("stats", help="cold-store row counts, documents by status, size on disk")
    p.add_argument("--json", action="store_true", help="machine-readable output on stdout")


def collect() -> dict:
    from h3.resources.store import open_store
    from h3.resources.store.tables import TABLES

    store = open_store()
    tables = {name: 0 for name in TABLES} | store.counts()
    by_status: dict[str, int] = {}
    for row in store.rows("documents", columns=["status"]):
        by_status[row["status"]] = by_status.get(row["status"], 0) + 1
    return {"tables": tables, "documents": by_status, "bytes_on_disk": store.bytes_on_disk(),
            "path": str(store.path)}


def run(args: argparse.Namespace) -> int:
    from h3.pipelines.cli.output import emit

    report = collect()
    lines = [f"document store: {report['path']} ({report['bytes_on_disk'] / 1e6:.1f} MB)"]
    width = max((len(name) for name in report["tables"]), default=0)
    lines += [f"  {name:<{width}} {count:>9} rows" for name, count in report["tables"].items()]
    lines.append("documents: " + (", ".join(f"{s} {n}" for s, n in sorted(
        report["documents"].items())) or "none"))
    emit(report, args.json, human="\n".join(lines))
    return 0
