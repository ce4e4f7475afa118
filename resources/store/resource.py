"""The document store as a Dagster resource, and `open_store()` for code outside Dagster."""

from __future__ import annotations

from dagster import ConfigurableResource, InitResourceContext
from pydantic import Field, PrivateAttr

from h3.ontology.document import Hit
from h3.resources.settings import load_config
from h3.resources.store.lance import LanceDocumentStore
from h3.resources.store.open import open_store, store_path


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

    def recall(self, query: str, k: int = 5, mode: str = "auto") -> list[Hit]:
        """The `k` best hits for `query` (mode: auto, text, structure, relation or documents, as
        `h3 recall --mode`), best first: each with doc_id, source, page, bbox, kind, text,
        score and via. Raises ValueError for an unknown mode or k < 1."""
        from h3.resources.recall import recall

        return [hit_of(h) for h in recall(self.get_store(), [query], k=k, mode=mode)[0]["hits"]]

    def get_store(self) -> LanceDocumentStore:
        """The run's store (outside a run, e.g. a resource built by hand: `open_store`'s)."""
        if not self._in_run:
            return open_store(self.path)
        if self._store is None:
            self._store = LanceDocumentStore(store_path(self.path), load_config().hbf.ann_index_type)
        return self._store


def hit_of(row: dict) -> Hit:
    """A recall hit (the JSON form `h3 recall --json` prints) as the typed `Hit`."""
    boxes = tuple(tuple(float(v) for v in b) for b in row.get("boxes") or ())
    return Hit(doc_id=row["doc_id"], source=row.get("source") or "", page=int(row["page"]),
               bbox=tuple(float(v) for v in row.get("bbox") or (0, 0, 0, 0)),
               kind=row.get("kind") or "text", text=row.get("text") or "",
               score=float(row.get("score") or 0.0), via=row.get("via") or "text",
               entities=tuple(row.get("entities") or ()), boxes=boxes)
