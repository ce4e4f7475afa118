"""`h3 stats`: row counts of every cold-store table, documents by status, bytes on disk (and
per stored page, part by part of H3_HOME: resources/disk_usage.py)."""

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
    from h3.resources.disk_usage import disk_report
    from h3_runtime.home import h3_home

    return {"tables": tables, "documents": by_status, "bytes_on_disk": store.bytes_on_disk(),
            "path": str(store.path), "disk": disk_report(h3_home())}


def run(args: argparse.Namespace) -> int:
    from h3.pipelines.cli.output import emit

    report = collect()
    lines = [f"document store: {report['path']} ({report['bytes_on_disk'] / 1e6:.1f} MB)"]
    width = max((len(name) for name in report["tables"]), default=0)
    lines += [f"  {name:<{width}} {count:>9} rows" for name, count in report["tables"].items()]
    lines.append("documents: " + (", ".join(f"{s} {n}" for s, n in sorted(
        report["documents"].items())) or "none"))
    disk = report["disk"]
    lines.append(f"H3_HOME {disk['home']}: {disk['pages']} stored pages, PDFs "
                 f"{disk['pdf_bytes'] / 1e6:.1f} MB; bytes per page by part "
                 f"(documents' parts {disk['document_bytes_over_pdf_bytes'] or '-'}x the PDFs):")
    lines += [f"  {p['part']:<28} {p['bytes'] / 1e6:>9.1f} MB  "
              f"{(p['bytes_per_page'] or 0) / 1e3:>8.1f} KB/page  {p['kind']}"
              for p in disk["parts"] if p["bytes"]]
    emit(report, args.json, human="\n".join(lines))
    return 0
