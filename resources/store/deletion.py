"""Removing one document from everything H³ keeps about it (plain Python, no Dagster).

A document leaves traces in four places: its rows in every doc-scoped cold-store table, the
knowledge-graph nodes it supported (nodes are shared across documents, so they are recomputed
from the edges that remain, and a node nobody else mentions disappears), files under H3_HOME
(figure crops, token vectors, staged payloads) and its precomputed KV in the cold tier.
`purge_document` clears all four; the Dagster partition is removed by
`pipelines.deletion.delete_document`, which wraps this.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from h3.resources.staging_io import drop_staged
from h3.resources.store.base import DocumentStore, sql_str
from h3_runtime.home import under_home

DOC_ID = re.compile(r"^[0-9a-f]{16}$")  # ontology.ids.doc_id_for_bytes: 16 lowercase hex


@dataclass
class PurgeReport:
    doc_id: str
    rows: dict[str, int] = field(default_factory=dict)  # rows removed per table
    entities_removed: list[str] = field(default_factory=list)  # nodes only this doc supported
    entities_refreshed: int = 0  # shared nodes recomputed without this document
    cross_checks_removed: int = 0
    files_removed: int = 0  # figure crops, token vectors, staged payloads
    kv_removed: list[str] = field(default_factory=list)  # cold-tier KV keys dropped

    def as_dict(self) -> dict:
        return {"doc_id": self.doc_id, "rows": self.rows,
                "entities_removed": len(self.entities_removed),
                "entities_refreshed": self.entities_refreshed,
                "cross_checks_removed": self.cross_checks_removed,
                "files_removed": self.files_removed, "kv_removed": len(self.kv_removed)}


def check_doc_id(doc_id: str) -> str:
    """Refuses anything but a document id (so no path trick reaches the file removals)."""
    if not isinstance(doc_id, str) or not DOC_ID.match(doc_id):
        raise ValueError(f"not a document id: {doc_id!r} (expected 16 lowercase hex characters)")
    return doc_id


def purge_document(store: DocumentStore, doc_id: str, kv_root: Path | None = None) -> PurgeReport:
    """Removes every trace of `doc_id` except its Dagster partition; returns what was removed.

    Idempotent: purging a document that is not there removes nothing and does not fail.
    Order: the entity ids and KV keys are read first (they are found through the rows being
    deleted), then rows go, then nodes are recomputed from the remaining edges."""
    check_doc_id(doc_id)
    report = PurgeReport(doc_id)
    touched = _entities_of(store, doc_id)
    kv_keys = {r["kv_key"] for r in store.rows("kv_blocks", f"doc_id = {sql_str(doc_id)}",
                                               ["kv_key"])} if "kv_blocks" in store.table_names() \
        else set()
    report.rows = {t: n for t, n in store.delete_document(doc_id).items() if n}
    if touched:
        from h3.resources.graph.store import refresh_nodes

        report.entities_refreshed = refresh_nodes(store, sorted(touched))
        remaining = {r["entity_id"] for r in store.rows(
            "entities", f"entity_id IN ({', '.join(sql_str(e) for e in sorted(touched))})",
            ["entity_id"])}
        report.entities_removed = sorted(touched - remaining)
    report.cross_checks_removed = _drop_cross_checks(store, doc_id)
    report.files_removed = _remove_files(doc_id)
    report.kv_removed = _drop_cold_kv(doc_id, kv_keys, kv_root)
    return report


def _entities_of(store: DocumentStore, doc_id: str) -> set[str]:
    if "edges" not in store.table_names():
        return set()
    edges = store.rows("edges", f"doc_id = {sql_str(doc_id)}", ["head_id", "tail_id"])
    return {e for r in edges for e in (r["head_id"], r["tail_id"]) if not e.startswith("doc:")}


def _drop_cross_checks(store: DocumentStore, doc_id: str) -> int:
    """Cross-document findings that cite the document are void without it."""
    if "cross_checks" not in store.table_names():
        return 0
    return store.delete_where("cross_checks", f"array_has(doc_ids, {sql_str(doc_id)})")


def _remove_files(doc_id: str) -> int:
    removed = drop_staged(doc_id)
    figures = under_home("figures", doc_id)
    if figures.is_dir():
        removed += sum(1 for p in figures.rglob("*") if p.is_file())
        shutil.rmtree(figures)
    tokens = under_home("semantic", "tokens", f"{doc_id}.npz")
    if tokens.exists():
        tokens.unlink()
        removed += 1
    return removed


def _drop_cold_kv(doc_id: str, keys: set[str], kv_root: Path | None) -> list[str]:
    """Drops the document's precomputed KV: its index under `kv_root` (`<cold tier>/docs`) and
    the blocks no other document shares, plus any first-format folder that names the document
    (by the keys indexed in `kv_blocks` or its meta.json)."""
    import json

    # torch: only when a document is removed
    from h3_runtime.kvcache.cold import KVBlockStore
    from h3_runtime.reuse.doc_kv import DocumentKV

    if kv_root is None:
        from h3.resources.runtime import doc_kv_root
        from h3.resources.settings import load_config

        kv_root = doc_kv_root(load_config().runtime)
    if not kv_root.is_dir():
        return []
    from h3.resources.navigation.prompts import part_kv_id

    kv = DocumentKV(KVBlockStore(kv_root.parent, max_bytes=2**62), kv_root)  # the cap: only for storing
    # `h3 ask --doc` stores each navigated part's KV under its own id (part_kv_id: "<doc>#<part>"),
    # not the document's: dropping the document's id alone left its parts' KV (hundreds of MB)
    # behind after `h3 delete` and after a changed file replaced its old version
    parts = part_kv_id(doc_id, "")
    ids = sorted({i.doc_id for i in kv.indexes() if i.doc_id == doc_id
                  or i.doc_id.startswith(parts)})
    found = [key for one in ids for key in kv.drop_document(one)]
    for folder in kv.legacy_documents():
        try:
            named = json.loads((folder / "meta.json").read_text()).get("doc_id") == doc_id
        except (OSError, ValueError, AttributeError):
            named = False
        if folder.name in keys or named:
            shutil.rmtree(folder, ignore_errors=True)
            found.append(folder.name)
    return sorted(found)
