"""A chunk's text stored once (resources/store/text_once.py): `text` is null on disk where it
equals `fts_text`, every read through the store gives the rows as written, and search hits and
scores equal those of a store that kept both copies."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from h3.resources.store import LanceDocumentStore
from h3.resources.store.text_once import fill_text
from h3.resources.text_lang import fts_form

TEXTS = ["Revenue grew 12% on higher cloud subscriptions and a stronger dollar.",
         "Goodwill impairment of $1.2 billion was recorded in the retail segment.",
         "营业收入同比增长百分之十二，主要来自云服务订阅。",
         "The lease liabilities and pension obligations are shown in note 9.",
         "Dividends paid rose to $2.3 billion; share buybacks were $5 billion.",
         ""]


def _rows() -> list[dict]:
    rng = np.random.default_rng(7)
    rows = []
    for i, text in enumerate(TEXTS):
        vector = rng.standard_normal(384).astype(np.float32)
        rows.append({"doc_id": "d", "chunk_id": f"d:c{i}", "page": 1, "bbox": [0.0, 0, 1, 1],
                     "text": text, "section": "s", "kind": "text", "token_count": 9,
                     "region_ids": [], "vector": (vector / np.linalg.norm(vector)).tolist(),
                     "language": "zh" if i == 2 else "en"})
    return rows


def _both_copies(path) -> LanceDocumentStore:
    """The same rows as the store wrote them before: `text` and `fts_text` both in full."""
    store = LanceDocumentStore(path)
    store.add("chunks", _rows()[:1])  # creates the table
    store.delete_where("chunks", "doc_id = 'd'")
    handle = store.table("chunks")
    full = [{**r, "fts_text": fts_form(r["text"])} for r in _rows()]
    handle.add(pa.Table.from_pylist(full, schema=handle.schema))
    store.ensure_indexes("chunks")
    return store


def _searches(store: LanceDocumentStore) -> list:
    query = _rows()[3]["vector"]
    return [store.vector_search("chunks", query, 6),
            store.vector_search("chunks", query, 3, columns=["chunk_id", "text"]),
            store.text_search("chunks", "revenue cloud", 5),
            store.text_search("chunks", "billion", 5, columns=["chunk_id", "text"]),
            store.text_search("chunks", fts_form("云服务"), 5, columns=["text"]),
            store.rows("chunks", "chunk_id = 'd:c1'", ["text"]),
            store.rows("chunks", columns=["chunk_id", "language"])]


def test_text_is_stored_once_and_read_back_whole(tmp_path):
    store = LanceDocumentStore(tmp_path / "db")
    store.add("chunks", _rows())
    raw = store.table("chunks").to_arrow()
    stored = dict(zip(raw.column("chunk_id").to_pylist(), raw.column("text").to_pylist(),
                      strict=True))
    assert stored["d:c2"] == TEXTS[2]  # Chinese: fts_text is its words, so both are kept
    assert all(stored[f"d:c{i}"] is None for i in (0, 1, 3, 4, 5))
    assert fill_text(raw).column("text").to_pylist() == TEXTS
    assert [r["text"] for r in store.rows("chunks")] == TEXTS
    assert [r["fts_text"] for r in store.rows("chunks")] == [fts_form(t) for t in TEXTS]
    assert store.rows("chunks", columns=["chunk_id", "text"])[1] == {"chunk_id": "d:c1",
                                                                     "text": TEXTS[1]}


def test_search_hits_and_scores_equal_a_store_with_both_copies(tmp_path):
    once = LanceDocumentStore(tmp_path / "once")
    once.add("chunks", _rows())
    once.ensure_indexes("chunks")
    assert _searches(once) == _searches(_both_copies(tmp_path / "both"))
    assert _searches(once)[3][0]["text"] == TEXTS[4]


def test_the_text_column_costs_nothing_where_it_is_the_same(tmp_path):
    rng = np.random.default_rng(3)
    words = ["".join(rng.choice(list("abcdefghijklmnopqrstuvwxyz"), 7)) for _ in range(5000)]
    rows = [{**_rows()[0], "chunk_id": f"d:c{i}", "text": " ".join(rng.choice(words, 300))}
            for i in range(100)]  # ~2.4 KB of text a row beside its 1.5 KB vector
    once, both = LanceDocumentStore(tmp_path / "once"), LanceDocumentStore(tmp_path / "both")
    once.add("chunks", rows)
    both.add("chunks", rows[:1])
    both.table("chunks").add(pa.Table.from_pylist(
        [{**r, "fts_text": r["text"]} for r in rows[1:]], schema=both.table("chunks").schema))
    assert once.rows("chunks") == both.rows("chunks")
    data = {s: sum(f.stat().st_size for f in (tmp_path / s / "chunks.lance" / "data").iterdir())
            for s in ("once", "both")}
    assert data["once"] < 0.8 * data["both"]
