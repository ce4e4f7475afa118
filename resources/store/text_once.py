"""A chunk's text stored once: `text` left null where it equals `fts_text` (plain Python).

`chunks.fts_text` is what the full-text index reads: the chunk's text itself, or for Chinese its
jieba words joined by spaces (resources/text_lang.py `fts_form`). For every other language the
two columns held the same string twice: 12.8 of the 79 MB `chunks` took on the development
filings. The store now writes such a row's `text` as null and fills it back from `fts_text` on
every read (`LanceDocumentStore.rows`, `vector_search`, `text_search`), so callers of the store
see the rows they wrote, and the full-text index reads the very column it read before: recall
is unchanged. Code that opens the LanceDB table itself, outside the store, must do the same
(`fill_text`). A table written before this keeps both copies and reads the same way.
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa
import pyarrow.compute as pc

from h3.resources.text_lang import fts_form

TEXT, FTS_TEXT = "text", "fts_text"


def stores_text_once(schema_names: Sequence[str]) -> bool:
    """Whether a table has both columns (the chunks table)."""
    return TEXT in schema_names and FTS_TEXT in schema_names


def stored_form(row: dict) -> dict:
    """The row as written: `fts_text` derived when not given, `text` null when the same string."""
    text = row.get(TEXT)
    fts = row.get(FTS_TEXT) or fts_form(text or "")
    return {**row, FTS_TEXT: fts, TEXT: None if text == fts else text}


def read_columns(schema_names: Sequence[str], columns: Sequence[str] | None
                 ) -> tuple[list[str] | None, bool]:
    """(the columns to read, whether `fts_text` is read only to fill `text` and then dropped)."""
    if columns is None or not stores_text_once(schema_names):
        return (None if columns is None else list(columns)), False
    if TEXT in columns and FTS_TEXT not in columns:
        return [*columns, FTS_TEXT], True
    return list(columns), False


def fill_text(table: pa.Table, drop_fts_text: bool = False) -> pa.Table:
    """`text` filled from `fts_text` where null (a table without both columns: as it is)."""
    if not stores_text_once(table.column_names):
        return table
    index = table.column_names.index(TEXT)
    filled = pc.coalesce(table.column(TEXT), table.column(FTS_TEXT))
    table = table.set_column(index, TEXT, filled)
    return table.drop_columns([FTS_TEXT]) if drop_fts_text else table
