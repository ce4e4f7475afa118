"""The abstract bases' contracts, checked on the real implementation and on its test double side
by side (tests/doubles.py): what unit tests learn from a double holds for the real thing."""

from __future__ import annotations

import numpy as np
import pytest

from h3.resources.models.embedder import TextEmbedder
from h3.resources.store import DocumentStore, LanceDocumentStore
from tests.doubles import HashEmbedder, MemoryStore


@pytest.fixture(params=["sbert", "double"])
def embedder(request) -> TextEmbedder:
    if request.param == "double":
        return HashEmbedder()
    from h3.resources.models.embedder import get_embedder

    return get_embedder(precision="fp32")


@pytest.fixture(params=["lance", "double"])
def store(request, tmp_path) -> DocumentStore:
    return LanceDocumentStore(tmp_path / "db") if request.param == "lance" else MemoryStore()


def test_embedder_gives_unit_rows_the_same_for_the_same_text(embedder):
    texts = ["the pump pressure is 4 bar", "the valve is painted red", "the pump pressure is 4 bar"]
    vectors = embedder.encode(texts)  # (3, dim)
    assert vectors.shape == (3, embedder.dim) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-4)
    assert np.allclose(vectors[0], vectors[2], atol=1e-6)
    assert np.allclose(embedder.encode(texts[:1])[0], vectors[0], atol=1e-5)  # batch-independent
    assert embedder.count_tokens("three short words") >= 3


def test_embedder_ranks_a_paraphrase_above_an_unrelated_text(embedder):
    query, near, far = embedder.encode(["pump pressure", "the pump pressure is 4 bar",
                                        "quarterly dividend announcement"])
    assert float(query @ near) > float(query @ far)


def _chunk(doc_id: str, i: int, text: str, vector: np.ndarray) -> dict:
    return {"doc_id": doc_id, "chunk_id": f"{doc_id}:c{i}", "page": 1, "bbox": [0, 0, 10, 10],
            "text": text, "section": "", "kind": "text", "token_count": 3, "region_ids": [],
            "vector": vector.tolist(), "language": "en", "fts_text": text}


def test_store_documents_status_and_deletion(store):
    vectors = HashEmbedder().encode(["a", "b"])  # (2, 384)
    for i, doc in enumerate(("a", "b")):
        store.upsert_document({"doc_id": doc, "source": f"{doc}.pdf", "status": "pending"})
        store.add("chunks", [_chunk(doc, 0, f"text of {doc}", vectors[i])])
    assert store.ok_doc_ids() == set()
    store.upsert_document({"doc_id": "a", "source": "a.pdf", "status": "ok"})
    assert store.ok_doc_ids() == {"a"} and store.count_rows("documents") == 2
    assert store.get_document("a")["status"] == "ok" and store.get_document("zz") is None
    assert store.rows("chunks", "doc_id IN ('b')", ["chunk_id"]) == [{"chunk_id": "b:c0"}]
    assert store.delete_document("a", keep_documents_row=True) == {"chunks": 1}
    assert store.delete_document("b") == {"chunks": 1, "documents": 1}
    assert store.counts() == {"chunks": 0, "documents": 1}
    assert store.rows("missing") == [] and store.count_rows("missing") == 0


def test_store_searches_rank_the_matching_chunk_first(store):
    texts = ["the pump pressure is 4 bar", "the valve is painted red", "a spare valve in the shed"]
    vectors = HashEmbedder().encode(texts)  # (3, 384)
    store.add("chunks", [_chunk("d", i, t, v) for i, (t, v) in enumerate(zip(texts, vectors, strict=True))])
    store.ensure_indexes("chunks")
    nearest = store.vector_search("chunks", vectors[1], 2, columns=["chunk_id"])
    assert [r["chunk_id"] for r in nearest][0] == "d:c1" and abs(nearest[0]["_distance"]) < 1e-4
    found = {r["chunk_id"] for r in store.text_search("chunks", "valve", 5)}
    assert found == {"d:c1", "d:c2"}
    assert store.vector_search("missing", vectors[0], 1) == []
