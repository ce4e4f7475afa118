"""The LanceDB cold store: table schema, abstract base, LanceDB implementation, Dagster resource.

Outside Dagster: `from resources.store import open_store; store = open_store()`.
"""

from resources.store.base import ColdStore, sql_str
from resources.store.lance import LanceColdStore
from resources.store.resource import ColdStoreResource, open_store
from resources.store.tables import TABLES, TableSpec

__all__ = ["ColdStore", "ColdStoreResource", "LanceColdStore", "TABLES", "TableSpec",
           "open_store", "sql_str"]
