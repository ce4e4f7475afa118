"""The document store (LanceDB rows: documents, chunks, regions, graph, summaries...): table
schema, abstract base, LanceDB implementation, Dagster resource. Not the KV cold tier, which is
`h3_runtime.kvcache.cold.KVBlockStore`. The asset that writes it keeps the seed's key
`cold_store` (asset keys are what users' schedules and UI bookmarks hold).

Outside Dagster: `from resources.store import open_store; store = open_store()`.
"""

from h3.resources.store.base import DocumentStore, sql_str
from h3.resources.store.lance import LanceDocumentStore
from h3.resources.store.resource import DocumentStoreResource, open_store
from h3.resources.store.tables import TABLES, TableSpec

# The first names, kept for code written against them (they said "cold store" for two things).
ColdStore = DocumentStore
LanceColdStore = LanceDocumentStore
ColdStoreResource = DocumentStoreResource

__all__ = ["ColdStore", "ColdStoreResource", "LanceColdStore", "DocumentStore", "DocumentStoreResource", "LanceDocumentStore", "TABLES", "TableSpec",
           "open_store", "sql_str"]
