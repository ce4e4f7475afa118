"""Small test doubles behind the product's abstract bases: `HashEmbedder` (a `TextEmbedder`) and
`MemoryStore` (a `DocumentStore`). No model, no disk: for unit tests of code that only needs the
contract, and checked against the real implementations by the contract tests beside them."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

import numpy as np

from h3.resources.models.embedder import EMBEDDING_DIM, TextEmbedder
from h3.resources.store.base import DocumentStore, Row

_WORD = re.compile(r"\w+")


class HashEmbedder(TextEmbedder):
    """Bag of hashed words -> unit vector: texts sharing words are close, others near-orthogonal."""

    def __init__(self, dim: int = EMBEDDING_DIM) -> None:
        self.dim = dim

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)  # (N, dim)
        for i, text in enumerate(texts):
            for word in _WORD.findall(text.lower()) or [""]:
                seed = int.from_bytes(hashlib.sha256(word.encode()).digest()[:8], "little")
                out[i] += np.random.default_rng(seed).standard_normal(self.dim)
            out[i] /= np.linalg.norm(out[i])
        return out


_CLAUSE = re.compile(
    r"^\s*(?P<col>\w+)\s*(?:(?P<op>=|!=)\s*(?P<value>'(?:[^']|'')*'|-?\d+(?:\.\d+)?)"
    r"|IN\s*\((?P<values>[^)]*)\)|(?P<null>IS\s+(?:NOT\s+)?NULL))\s*$", re.IGNORECASE)


def _literal(text: str):
    text = text.strip()
    if text.startswith("'"):
        return text[1:-1].replace("''", "'")
    return float(text) if "." in text else int(text)


def _predicate(where: str | None):
    """A row filter for the subset of SQL the product's simple filters use: `true`, and clauses
    `col = v`, `col != v`, `col IN (v, ...)`, `col IS [NOT] NULL` joined by AND."""
    if where is None or where.strip().lower() == "true":
        return lambda row: True
    tests = []
    for clause in re.split(r"\s+AND\s+", where, flags=re.IGNORECASE):
        m = _CLAUSE.match(clause)
        if m is None:
            raise NotImplementedError(f"MemoryStore: filter not supported: {clause!r}")
        col = m["col"]
        if m["null"]:
            wants_null = "NOT" not in m["null"].upper()
            tests.append(lambda r, c=col, n=wants_null: (r.get(c) is None) == n)
        elif m["values"] is not None:
            values = {_literal(v) for v in re.findall(r"'(?:[^']|'')*'|-?\d+(?:\.\d+)?",
                                                     m["values"])}
            tests.append(lambda r, c=col, vs=values: r.get(c) in vs)
        else:
            value, equal = _literal(m["value"]), m["op"] == "="
            tests.append(lambda r, c=col, v=value, e=equal: (r.get(c) == v) == e)
    return lambda row: all(test(row) for test in tests)


class MemoryStore(DocumentStore):
    """Tables as lists of dicts in memory (any table name; columns as the rows give them)."""

    def __init__(self) -> None:
        self.tables: dict[str, list[Row]] = {}

    def table_names(self) -> list[str]:
        return sorted(self.tables)

    def has_column(self, table: str, column: str) -> bool:
        return any(column in row for row in self.tables.get(table, []))

    def add(self, table: str, rows: Sequence[Row]) -> int:
        if rows:
            self.tables.setdefault(table, []).extend(dict(r) for r in rows)
        return len(rows)

    def delete_where(self, table: str, where: str) -> int:
        if table not in self.tables:
            return 0
        match, rows = _predicate(where), self.tables[table]
        self.tables[table] = [r for r in rows if not match(r)]  # an emptied table stays, as in
        return len(rows) - len(self.tables[table])               # LanceDB

    def rows(self, table: str, where: str | None = None, columns: Sequence[str] | None = None,
             limit: int | None = None) -> list[Row]:
        match = _predicate(where)
        found = [r for r in self.tables.get(table, []) if match(r)][:limit]
        return [self._pick(r, columns) for r in found]

    def count_rows(self, table: str) -> int:
        return len(self.tables.get(table, []))

    def vector_search(self, table: str, vector: Sequence[float], k: int,
                      where: str | None = None, columns: Sequence[str] | None = None) -> list[Row]:
        query = np.asarray(vector, dtype=np.float32)  # (D,)
        found = []
        for row in self.rows(table, where):
            v = np.asarray(row["vector"], dtype=np.float32)  # (D,)
            cosine = float(v @ query / (np.linalg.norm(v) * np.linalg.norm(query)))
            found.append({**self._pick(row, columns), "_distance": 1.0 - cosine})
        return sorted(found, key=lambda r: r["_distance"])[:k]

    def text_search(self, table: str, query: str, k: int, where: str | None = None,
                    columns: Sequence[str] | None = None) -> list[Row]:
        words = set(_WORD.findall(query.lower()))
        found = []
        for row in self.rows(table, where):
            text = " ".join(str(v) for v in row.values() if isinstance(v, str)).lower()
            score = len(words & set(_WORD.findall(text)))
            if score:
                found.append({**self._pick(row, columns), "_score": float(score)})
        return sorted(found, key=lambda r: -r["_score"])[:k]

    def ensure_indexes(self, table: str, rebuild_fts: bool = False) -> dict[str, str]:
        return {}  # every search here is exhaustive

    def bytes_on_disk(self) -> int:
        return 0

    @staticmethod
    def _pick(row: Row, columns: Sequence[str] | None) -> Row:
        return {c: row.get(c) for c in columns} if columns else dict(row)


@contextmanager
def scripted_intents(register: Callable[[], None], pages: int) -> Iterator:
    """A recall context whose router knows only the intents `register()` registers, over a
    one-document in-memory store ("d", `pages` pages); the real intents come back afterwards."""
    from h3.resources.recall import INTENTS
    from h3.resources.recall.router import _load_intents, make_context

    _load_intents()  # the real ones first, so that recall() does not register them over ours
    saved = dict(INTENTS)
    INTENTS.clear()
    try:
        register()
        store = MemoryStore()
        store.upsert_document({"doc_id": "d", "source": "d.pdf", "status": "ok", "pages": pages})
        yield make_context(store, embed=HashEmbedder().encode)
    finally:
        INTENTS.clear()
        INTENTS.update(saved)
