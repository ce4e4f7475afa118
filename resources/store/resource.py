"""The cold store as a Dagster resource, and `open_store()` for code outside Dagster."""

from __future__ import annotations

import threading
from pathlib import Path

from dagster import ConfigurableResource
from pydantic import Field

from h3_runtime.home import under_home
from resources.settings import load_config
from resources.store.lance import LanceColdStore

_STORES: dict[str, LanceColdStore] = {}
_LOCK = threading.Lock()


def store_path(path: str | None = None) -> Path:
    """`path`, or $H3_HOME/lancedb by default."""
    return Path(path).expanduser().resolve() if path else under_home("lancedb")


def open_store(path: str | None = None) -> LanceColdStore:
    """The process-wide store for a path (default $H3_HOME/lancedb); created on first use."""
    resolved = str(store_path(path))
    with _LOCK:
        if resolved not in _STORES:
            _STORES[resolved] = LanceColdStore(resolved, load_config().hbf.ann_index_type)
        return _STORES[resolved]


class ColdStoreResource(ConfigurableResource):
    """The LanceDB cold store (documents, regions, chunks, and tables other stages register)."""

    path: str | None = Field(
        default=None, description="LanceDB folder; null means $H3_HOME/lancedb")

    def get_store(self) -> LanceColdStore:
        return open_store(self.path)
