"""`open_store()`: the document store for code outside Dagster (the CLI, benches, a notebook).

Kept free of Dagster imports: `h3 recall` opens the store and must not wait ~1-2 s for Dagster
to import (the resource, resource.py, is for runs)."""

from __future__ import annotations

import threading
from pathlib import Path

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
