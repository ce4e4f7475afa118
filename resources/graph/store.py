"""Writing and reading the knowledge graph in the document store."""

from __future__ import annotations

import threading

from h3.resources.graph.build import MENTIONS, edge_rows, node_rows
from h3.resources.nlp.extract import Extraction
from h3.resources.store.base import DocumentStore, sql_str
from h3.resources.store.tables import EDGES, ENTITIES

_NODES_LOCK = threading.Lock()


def write_document_graph(store: DocumentStore, doc_id: str, extraction: Extraction) -> dict:
    """Replaces the document's edges, then refreshes the nodes they touch.

    Idempotent: running it twice on the same extraction leaves the same rows."""
    rows = edge_rows(extraction, doc_id)
    store.delete_where(EDGES.name, f"doc_id = {sql_str(doc_id)}")
    store.add(EDGES.name, rows)
    touched = sorted({r["tail_id"] for r in rows} | {r["head_id"] for r in rows
                                                      if not r["head_id"].startswith("doc:")})
    refresh_nodes(store, touched)
    return {"edges": sum(r["relation"] != MENTIONS for r in rows),
            "mentions": sum(r["relation"] == MENTIONS for r in rows), "entities": len(touched)}


def refresh_nodes(store: DocumentStore, entity_ids: list[str], batch: int = 200) -> int:
    """Recomputes the node rows of these entities from all their edges (every document)."""
    written = 0
    with _NODES_LOCK:
        for i in range(0, len(entity_ids), batch):
            ids = ", ".join(sql_str(e) for e in entity_ids[i:i + batch])
            edges = store.rows(EDGES.name, f"head_id IN ({ids}) OR tail_id IN ({ids})")
            wanted = set(entity_ids[i:i + batch])
            nodes = [n for n in node_rows(edges) if n["entity_id"] in wanted]
            store.delete_where(ENTITIES.name, f"entity_id IN ({ids})")
            written += store.add(ENTITIES.name, nodes)
    return written


def rebuild_all_nodes(store: DocumentStore) -> int:
    """Drops every node and rebuilds them from the edges (drops nodes of deleted documents)."""
    nodes = node_rows(store.rows(EDGES.name))
    with _NODES_LOCK:
        store.delete_where(ENTITIES.name, "true")
        return store.add(ENTITIES.name, nodes)
