"""`h3 list [--status ok|failed] [--json]`: the documents of the store (INTERFACES.md), each
with its Dagster partition key (`<file name>-<doc_id>`, what the UI's partition picker finds;
null for a document without a partition, e.g. one that failed the pre-run checks)."""

from __future__ import annotations

import argparse
import json

from h3.pipelines.cli.output import emit, log

# Filled in by the filing extraction when it runs (issue 11); listed when the store has them.
OPTIONAL_FIELDS = ("issuer", "form_type", "period")


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("list", help="the documents: id, file, status, reason, pages, chunks")
    p.add_argument("--status", choices=["ok", "failed", "pending"], help="only these documents")
    p.add_argument("--json", action="store_true", help="machine-readable output on stdout")


def list_documents(store, status: str | None = None,
                   partition_keys: dict[str, str] | None = None) -> list[dict]:
    """The INTERFACES.md `h3 list --json` rows, sorted by file then id. `partition_keys`:
    doc_id -> Dagster partition key (h3.pipelines.partitions.partition_keys_by_doc)."""
    where = f"status = '{status}'" if status else None
    keys = partition_keys or {}
    out = []
    for row in store.rows("documents", where):
        meta = _json(row.get("metadata_json"))
        entry = {"doc_id": row["doc_id"], "source": row.get("source"), "status": row["status"],
                 "reason": row.get("reason"), "pages": row.get("pages"),
                 "chunks": (meta.get("counts") or {}).get("chunks", 0),
                 "partition_key": keys.get(row["doc_id"])}
        entry.update({f: row[f] for f in OPTIONAL_FIELDS if row.get(f)})
        out.append(entry)
    return sorted(out, key=lambda d: (d["source"] or "", d["doc_id"]))


def _json(text: str | None) -> dict:
    try:
        return json.loads(text or "{}")
    except ValueError:
        return {}


def _human_list(docs: list[dict]) -> str:
    if not docs:
        return "no documents (run `h3 index-build --path DIR`)"
    lines = [f"{'doc_id':<16}  {'status':<7} {'pages':>5} {'chunks':>6}  file"]
    for d in docs:
        lines.append(f"{d['doc_id']:<16}  {d['status']:<7} {d['pages'] or 0:>5} "
                     f"{d['chunks']:>6}  {d['source']}"
                     + (f"  [partition {d['partition_key']}]" if d.get("partition_key") else ""))
        if d["reason"]:
            lines.append(f"{'':<18}{d['reason']}")
    counts: dict[str, int] = {}
    for d in docs:
        counts[d["status"]] = counts.get(d["status"], 0) + 1
    lines.append(", ".join(f"{s} {n}" for s, n in sorted(counts.items())))
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    from h3.resources.store import open_store

    docs = list_documents(open_store(), args.status, _partition_keys())
    emit(docs, args.json, human=_human_list(docs))
    return 0


def _partition_keys() -> dict[str, str]:
    """doc_id -> partition key from this H3_HOME's Dagster instance (read only: the renaming of
    old-style keys happens where partitions are added); {} with a warning if it cannot be read,
    so that listing the store never depends on Dagster."""
    try:
        from h3.pipelines.instance import get_instance
        from h3.pipelines.partitions import partition_keys_by_doc

        return partition_keys_by_doc(get_instance())
    except Exception as exc:  # e.g. an unreachable PostgreSQL instance storage
        log(f"h3 list: partition keys not shown: the Dagster instance cannot be read: {exc}")
        return {}
