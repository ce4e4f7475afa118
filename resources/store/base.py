"""The document store's contract, independent of LanceDB: tables of rows keyed by document.

Guarantees every implementation keeps:
- `delete_document(doc_id)` removes that document's rows from every doc-scoped table (tables
  registered later included), so replacing a document never leaves stale rows behind.
- Recall sees a document only once its `documents` row says status "ok"; ingestion writes the
  document's other rows first and flips the status last (see `ok_doc_ids`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import Any

from h3.resources.store.tables import DOCUMENTS

Row = dict[str, Any]


def sql_str(value: str) -> str:
    """A SQL string literal (single quotes doubled) for `where` filters."""
    return "'" + str(value).replace("'", "''") + "'"


class DocumentStore(ABC):
    """Tables of rows; each doc-scoped table has a `doc_id` column."""

    @abstractmethod
    def table_names(self) -> list[str]:
        """Names of the tables that exist in the store (registered or not)."""

    @abstractmethod
    def add(self, table: str, rows: Sequence[Row]) -> int:
        """Appends rows (creating a registered table on first use); returns how many were added."""

    @abstractmethod
    def delete_where(self, table: str, where: str) -> int:
        """Deletes the rows matching a SQL filter; returns how many were removed."""

    @abstractmethod
    def rows(self, table: str, where: str | None = None, columns: Sequence[str] | None = None,
             limit: int | None = None) -> list[Row]:
        """Rows matching a filter (all rows when None); a missing table gives []."""

    @abstractmethod
    def count_rows(self, table: str) -> int:
        """Row count; 0 for a table that does not exist yet."""

    @abstractmethod
    def vector_search(self, table: str, vector: Sequence[float], k: int,
                      where: str | None = None, columns: Sequence[str] | None = None) -> list[Row]:
        """k nearest rows by cosine distance, each with `_distance`; [] if the table is missing."""

    @abstractmethod
    def text_search(self, table: str, query: str, k: int, where: str | None = None,
                    columns: Sequence[str] | None = None) -> list[Row]:
        """Full-text (BM25) matches, best first, each with `_score`; [] if the table is missing."""

    @abstractmethod
    def ensure_indexes(self, table: str, rebuild_fts: bool = False) -> dict[str, str]:
        """Creates or refreshes the table's full-text and (when large enough) ANN indexes.
        `rebuild_fts`: recreate the full-text indexes even where they exist (after a table's rows
        were all rewritten)."""

    @abstractmethod
    def bytes_on_disk(self) -> int:
        """Total size of the store's files."""

    # ---- document-level helpers built on the primitives above ----

    def document_lock(self, doc_id: str) -> AbstractContextManager:
        """Held while a document is rewritten (delete + add), so that two writers of the same
        document never interleave; a store with one writer needs none (the default)."""
        return nullcontext()

    def doc_scoped_tables(self) -> list[str]:
        """Every existing table with a `doc_id` column (covers tables registered by others)."""
        return [name for name in self.table_names() if self.has_column(name, "doc_id")]

    @abstractmethod
    def has_column(self, table: str, column: str) -> bool:
        """Whether an existing table has this column."""

    def delete_document(self, doc_id: str, keep_documents_row: bool = False) -> dict[str, int]:
        """Removes the document's rows from every doc-scoped table; returns rows removed per table.

        With `keep_documents_row`, its `documents` row stays (used before a re-ingest)."""
        removed: dict[str, int] = {}
        for name in self.doc_scoped_tables():
            if keep_documents_row and name == DOCUMENTS.name:
                continue
            removed[name] = self.delete_where(name, f"doc_id = {sql_str(doc_id)}")
        return removed

    def upsert_document(self, row: Row) -> None:
        """Writes the one `documents` row of `row["doc_id"]`, replacing any previous one."""
        self.delete_where(DOCUMENTS.name, f"doc_id = {sql_str(row['doc_id'])}")
        self.add(DOCUMENTS.name, [row])

    def get_document(self, doc_id: str) -> Row | None:
        found = self.rows(DOCUMENTS.name, where=f"doc_id = {sql_str(doc_id)}", limit=1)
        return found[0] if found else None

    def ok_doc_ids(self) -> set[str]:
        """Documents whose ingestion completed: the only ones recall may return."""
        return {r["doc_id"] for r in self.rows(DOCUMENTS.name, "status = 'ok'", ["doc_id"])}

    def counts(self) -> dict[str, int]:
        return {name: self.count_rows(name) for name in sorted(self.table_names())}
