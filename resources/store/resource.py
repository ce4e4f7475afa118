"""The document store as a Dagster resource, and `open_store()` for code outside Dagster."""

from __future__ import annotations

import threading
from pathlib import Path

from dagster import ConfigurableResource, InitResourceContext
from pydantic import Field, PrivateAttr

from h3.resources.settings import load_config
from h3.resources.store.lance import LanceDocumentStore
from h3_runtime.home import under_home

# Outside Dagster (the CLI, benches): one store per path and process, so a command that opens
# the store from several places shares one connection and its table handles. A Dagster run
# builds its own in `setup_for_execution`.
_STORES: dict[str, LanceDocumentStore] = {}
_LOCK = threading.Lock()


def store_path(path: str | None = None) -> Path:
    """`path`, or $H3_HOME/lancedb by default."""
    return Path(path).expanduser().resolve() if path else under_home("lancedb")


def open_store(path: str | None = None) -> LanceDocumentStore:
    """The process-wide store for a path (default $H3_HOME/lancedb), for code outside Dagster;
    created on first use."""
    resolved = str(store_path(path))
    with _LOCK:
        if resolved not in _STORES:
            _STORES[resolved] = LanceDocumentStore(resolved, load_config().hbf.ann_index_type)
        return _STORES[resolved]


class DocumentStoreResource(ConfigurableResource):
    """The LanceDB document store (every table of resources/store/tables.py)."""

    path: str | None = Field(
        default=None, description="LanceDB folder; null means $H3_HOME/lancedb")

    _in_run: bool = PrivateAttr(default=False)
    _store: LanceDocumentStore | None = PrivateAttr(default=None)

    def setup_for_execution(self, context: InitResourceContext) -> None:
        # a connection of the run's own: cheap to open (a folder), and every read sees the
        # latest commit, so nothing is gained by sharing one across runs. Opened at the first
        # get_store, so that a bad h3_config.yaml fails the step that reads it, naming the key
        # (a resource that fails to start fails the run without a step failure to show it).
        self._in_run, self._store = True, None

    def get_store(self) -> LanceDocumentStore:
        """The run's store (outside a run, e.g. a resource built by hand: `open_store`'s)."""
        if not self._in_run:
            return open_store(self.path)
        if self._store is None:
            self._store = LanceDocumentStore(store_path(self.path), load_config().hbf.ann_index_type)
        return self._store
