"""The filings bench's compressed-layer store (ProjectedStore) answers every search text recall
makes, including a full-text search for some columns only (the corpus-mention lookup's doc_id
and text), which has no chunk id to look a projected vector up by."""

from __future__ import annotations

import numpy as np

from benchmarks.documents.filings import ProjectedStore


class _Chunks:
    """Two chunks; full text returns whatever columns are asked for (a test double)."""

    ROWS = [{"chunk_id": "d:c0", "doc_id": "d", "text": "revenue grew", "vector": [1.0, 0.0]},
            {"chunk_id": "d:c1", "doc_id": "d", "text": "costs fell", "vector": [0.0, 1.0]}]

    def rows(self, table, where=None, columns=None, limit=None):
        return [dict(r) for r in self.ROWS]

    def text_search(self, table, query, k, where=None, columns=None):
        hits = [r for r in self.ROWS if query in r["text"]][:k]
        return [{c: r[c] for c in columns} if columns else dict(r) for r in hits]


def test_a_search_for_some_columns_is_returned_as_the_store_gives_it():
    store = ProjectedStore(_Chunks(), lambda x: np.asarray(x) * 2)
    assert store.text_search("chunks", "revenue", 5, columns=["doc_id", "text"]) == [
        {"doc_id": "d", "text": "revenue grew"}]
    full = store.text_search("chunks", "costs", 5)
    assert full[0]["chunk_id"] == "d:c1" and list(full[0]["vector"]) == [0.0, 2.0]
