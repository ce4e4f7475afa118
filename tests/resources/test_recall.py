"""The recall router and the text-recall pieces. The store is real LanceDB; the embedder is a
deterministic test double here (the real SBERT path is tested in tests/pipelines)."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from h3.resources.recall import INTENTS, RecallContext, recall, register_intent
from h3.resources.recall.router import make_context
from h3.resources.recall.text import coverage, rrf, terms
from h3.resources.store import LanceDocumentStore
from h3.resources.store.tables import EMBEDDING_DIM


def bag_of_words_embed(texts):
    """Hashes words into 384 buckets: texts sharing words get similar unit vectors."""
    out = np.zeros((len(texts), EMBEDDING_DIM), dtype=np.float32)
    for i, text in enumerate(texts):
        for word in terms(text):
            out[i, int(hashlib.md5(word.encode()).hexdigest(), 16) % EMBEDDING_DIM] += 1.0
        out[i] /= max(np.linalg.norm(out[i]), 1e-6)
    return out


@pytest.fixture
def store(tmp_path):
    store = LanceDocumentStore(tmp_path / "db")
    texts = {"ok1": ["the pump pressure is four bar", "the boiler is in the basement"],
             "half": ["the pump pressure is four bar exactly"]}
    for doc_id, chunk_texts in texts.items():
        vecs = bag_of_words_embed(chunk_texts)
        store.add("chunks", [{"doc_id": doc_id, "chunk_id": f"{doc_id}:c{i}", "page": i + 1,
                              "bbox": [1, 2, 3, 4], "text": t, "section": "", "kind": "text",
                              "token_count": 5, "region_ids": [], "vector": v.tolist()}
                             for i, (t, v) in enumerate(zip(chunk_texts, vecs, strict=True))])
    store.upsert_document({"doc_id": "ok1", "source": "/x/ok.pdf", "status": "ok"})
    store.upsert_document({"doc_id": "half", "source": "/x/half.pdf", "status": "pending"})
    store.ensure_indexes("chunks")
    return store


def test_only_completed_documents_are_returned(store):
    ctx = make_context(store, embed=bag_of_words_embed)
    for mode in ("auto", "text"):
        [result] = recall(store, ["pump pressure"], k=5, mode=mode, ctx=ctx)
        assert {h["doc_id"] for h in result["hits"]} == {"ok1"}
        assert result["hits"][0]["page"] == 1 and result["hits"][0]["source"] == "/x/ok.pdf"
        assert result["intent"] == ["text"] and result["hits"][0]["via"] == "text"


def test_registered_intents_fire_in_auto_mode(store):
    from h3.ontology.document import Hit

    def tables_only(ctx: RecallContext, query: str, k: int):
        return [Hit("ok1", "/x/ok.pdf", 2, (0, 0, 1, 1), "table", "T", 9.0, "structure")]

    saved = dict(INTENTS)
    try:
        register_intent("structure", tables_only, detect=lambda q: "table" in q)
        ctx = make_context(store, embed=bag_of_words_embed)
        plain, asked = recall(store, ["boiler", "boiler table"], k=3, ctx=ctx)
        assert plain["intent"] == ["text"]
        assert asked["intent"] == ["text", "structure"]
        assert asked["hits"][0]["via"] == "structure"
    finally:
        INTENTS.clear()
        INTENTS.update(saved)


def test_unknown_mode_is_refused(store):
    with pytest.raises(ValueError, match="unknown recall mode"):
        recall(store, ["x"], mode="telepathy", ctx=make_context(store, bag_of_words_embed))


def test_rrf_and_coverage():
    a = [{"chunk_id": "x"}, {"chunk_id": "y"}]
    b = [{"chunk_id": "y"}, {"chunk_id": "z"}]
    fused = [row["chunk_id"] for row, _ in rrf(a, b)]
    assert fused[0] == "y" and set(fused) == {"x", "y", "z"}
    assert coverage(terms("where are solvents stored"), "Solvents: store them here") == 1.0
    assert coverage(terms("pier seven"), "pier three") == 0.5
