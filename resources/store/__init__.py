"""The document store (LanceDB rows: documents, chunks, regions, graph, summaries...): table
schema, abstract base, LanceDB implementation, Dagster resource. Not the KV cold tier, which is
`h3_runtime.kvcache.cold.KVBlockStore`. The asset that writes it keeps the seed's key
`cold_store` (asset keys are what users' schedules and UI bookmarks hold).

Outside Dagster: `from h3.resources.store import open_store; store = open_store()`. The Dagster
resource loads lazily (PEP 562): the command line opens the store without importing Dagster.
"""

from typing import Any

from h3.resources.store.base import DocumentStore, sql_str
from h3.resources.store.lance import LanceDocumentStore
from h3.resources.store.open import open_store
from h3.resources.store.tables import TABLES, TableSpec

# The first names, kept for code written against them (they said "cold store" for two things).
ColdStore = DocumentStore
LanceColdStore = LanceDocumentStore

__all__ = ["ColdStore", "ColdStoreResource", "LanceColdStore", "DocumentStore", "DocumentStoreResource", "LanceDocumentStore", "TABLES", "TableSpec",
           "open_store", "sql_str"]


def __getattr__(name: str) -> Any:
    if name in ("DocumentStoreResource", "ColdStoreResource"):
        from h3.resources.store.resource import DocumentStoreResource

        return DocumentStoreResource
    raise AttributeError(f"module 'h3.resources.store' has no attribute {name!r}")
