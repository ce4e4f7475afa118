"""The entity gazetteer of a store: every name and alias of the knowledge graph's named
entities (normalised) -> their entity ids. Relation recall finds a query's entities by it
(relation.py), and `h3 ask` asks it whether a name is an organisation (mentions.py); its own
module so that neither import path loops through the other."""

from __future__ import annotations

import threading
import time

from h3.ontology.entities import NAME_TYPES, normalise_name
from h3.resources.recall.saved import cache_file, read_saved, save
from h3.resources.store.base import DocumentStore
from h3.resources.store.tables import EDGES, ENTITIES

# a data cache, not a client: the entity gazetteer per store, rebuilt when the graph tables or
# the set of ok documents change (`version` below), so a batch of queries builds it once
_CACHE: dict[str, tuple[tuple, dict[str, list[str]]]] = {}
_CHECKED: dict[str, float] = {}  # store -> when its graph's version was last read
_LOCK = threading.Lock()


# How long a gazetteer is used without asking the store whether its graph changed: the check
# (three row counts) costs ~10 ms, a third of a warm text recall, on every query of a batch.
VERSION_CHECK_S = 2.0


def gazetteer(store: DocumentStore) -> dict[str, list[str]]:
    """normalised name or alias -> entity ids (cached until the entities table changes; the
    change is looked for at most every VERSION_CHECK_S seconds)."""
    key = str(getattr(store, "path", id(store)))
    with _LOCK:
        cached = _CACHE.get(key)
        if cached and time.monotonic() - _CHECKED.get(key, 0.0) < VERSION_CHECK_S:
            return cached[1]
    ok = store.ok_doc_ids()  # nodes of deleted or failed documents name nothing recallable
    version = (store.count_rows(ENTITIES.name), store.count_rows(EDGES.name), len(ok))
    with _LOCK:
        _CHECKED[key] = time.monotonic()
        if cached and cached[0] == version:
            return cached[1]
    # kept between processes: reading every entity row took ~0.3 s of each `h3 recall`'s start
    # on the 39 development filings, the saved names ~0.02 s
    saved = cache_file("gazetteer", key, version, sorted(ok))
    names = read_saved(saved)
    if names is None:
        names = _build_gazetteer(store, ok)
        save(saved, names, replaces_others=True)  # one store's earlier versions
    with _LOCK:
        _CACHE[key] = (version, names)
    return names


def _build_gazetteer(store: DocumentStore, ok: set[str]) -> dict[str, list[str]]:
    names: dict[str, list[str]] = {}
    columns = ["entity_id", "name", "type", "aliases", "doc_ids"]
    for node in store.rows(ENTITIES.name, columns=columns):
        if node["type"] not in NAME_TYPES or not ok.intersection(node["doc_ids"] or []):
            continue  # dates and amounts take part in no relation
        for form in {node["name"], *(node["aliases"] or [])}:
            norm = normalise_name(form, "ORG")
            if len(norm) >= 2 and not norm.isdigit():
                ids = names.setdefault(norm, [])
                if node["entity_id"] not in ids:
                    ids.append(node["entity_id"])
    return names
