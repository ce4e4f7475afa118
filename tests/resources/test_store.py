"""The LanceDB document store: generic per-document deletion, visibility, search (real LanceDB)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from h3.resources.store import TABLES, LanceDocumentStore, TableSpec
from h3.resources.store.tables import EMBEDDING_DIM


def _chunk(doc_id: str, i: int, text: str, vec: np.ndarray) -> dict:
    return {"doc_id": doc_id, "chunk_id": f"{doc_id}:c{i}", "page": 1, "bbox": [0, 0, 10, 10],
            "text": text, "section": "", "kind": "text", "token_count": 3, "region_ids": [],
            "vector": vec.tolist()}


def _unit(seed: int) -> np.ndarray:
    v = np.random.default_rng(seed).standard_normal(EMBEDDING_DIM).astype(np.float32)
    return v / np.linalg.norm(v)


def test_delete_document_covers_tables_declared_later(tmp_path, monkeypatch):
    store = LanceDocumentStore(tmp_path / "db")
    monkeypatch.setitem(TABLES, "test_entities", TableSpec("test_entities", pa.schema([
        pa.field("doc_id", pa.string()), pa.field("text", pa.string())])))
    for doc in ("a", "b"):
        store.upsert_document({"doc_id": doc, "source": f"{doc}.pdf", "status": "ok"})
        store.add("chunks", [_chunk(doc, 0, f"text of {doc}", _unit(1))])
        store.add("test_entities", [{"doc_id": doc, "text": "Acme"}])
    removed = store.delete_document("a")
    assert removed == {"chunks": 1, "documents": 1, "test_entities": 1}
    assert store.counts() == {"chunks": 1, "documents": 1, "test_entities": 1}
    assert store.rows("test_entities")[0]["doc_id"] == "b"


def test_upsert_replaces_row_and_ok_ids_follow_status(tmp_path):
    store = LanceDocumentStore(tmp_path / "db")
    store.upsert_document({"doc_id": "x", "source": "x.pdf", "status": "pending"})
    assert store.ok_doc_ids() == set()
    store.upsert_document({"doc_id": "x", "source": "x.pdf", "status": "ok"})
    assert store.ok_doc_ids() == {"x"}
    assert store.count_rows("documents") == 1


def test_vector_and_full_text_search(tmp_path):
    store = LanceDocumentStore(tmp_path / "db")
    store.add("chunks", [_chunk("d", 0, "the pump pressure is 4 bar", _unit(1)),
                         _chunk("d", 1, "the valve is painted red", _unit(2))])
    assert store.ensure_indexes("chunks") == {"fts_text": "fts created"}
    store.add("chunks", [_chunk("d", 2, "a spare valve is in the shed", _unit(3))])  # unindexed
    found = {r["chunk_id"] for r in store.text_search("chunks", "valve", 5)}
    assert found == {"d:c1", "d:c2"}
    nearest = store.vector_search("chunks", _unit(2), 1)
    assert nearest[0]["chunk_id"] == "d:c1" and abs(nearest[0]["_distance"]) < 1e-5


def test_quotes_in_values_are_escaped(tmp_path):
    store = LanceDocumentStore(tmp_path / "db")
    store.upsert_document({"doc_id": "q", "source": "it's.pdf", "status": "ok"})
    from h3.resources.store import sql_str

    assert store.rows("documents", f"source = {sql_str(chr(105) + chr(116) + chr(39) + 's.pdf')}")


@pytest.mark.parametrize("kind", ["IVF_PQ", "IVF_SQ"])
def test_ann_index_is_built_once_the_table_is_large(tmp_path, monkeypatch, kind):
    import h3.resources.store.lance as lance

    monkeypatch.setattr(lance, "ANN_MIN_ROWS", 600)  # the real threshold is 20,000 rows
    store = LanceDocumentStore(tmp_path / "db", kind)
    rng = np.random.default_rng(0)
    vecs = rng.standard_normal((600, EMBEDDING_DIM)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    store.add("chunks", [_chunk("d", i, f"row {i}", v) for i, v in enumerate(vecs)])
    done = store.ensure_indexes("chunks")
    assert done == {"fts_text": "fts created", "vector": f"ann {kind} created"}
    kinds = {ix.index_type.replace("_", "").upper() for ix in store.table("chunks").list_indices()}
    assert kinds == {"FTS", kind.replace("_", "")}  # Lance names them IvfPq, IvfSq
    hits = store.vector_search("chunks", vecs[7], 10)
    assert "d:c7" in {h["chunk_id"] for h in hits}  # approximate, but finds itself
    assert store.ensure_indexes("chunks") == {}  # nothing to redo


def test_a_large_table_filters_by_document_through_a_btree(tmp_path, monkeypatch):
    """From FILTER_INDEX_MIN_ROWS rows the chunks' doc_id gets a B-tree (a search within the
    routed documents then reads no column of every row); rows added after it are still found,
    and it is not taken for a vector index."""
    import h3.resources.store.lance as lance

    monkeypatch.setattr(lance, "FILTER_INDEX_MIN_ROWS", 40)  # the real threshold is 20,000 rows
    monkeypatch.setattr(lance, "ANN_MIN_ROWS", 40)
    store = LanceDocumentStore(tmp_path / "db")
    store.add("chunks", [_chunk(f"d{i % 4}", i, f"row {i}", _unit(i)) for i in range(40)])
    store.table("chunks").create_fts_index("fts_text")  # the ANN left out, as a store built
    store._fts_columns.clear()  # before its first vector index would be
    monkeypatch.setattr(store, "create_ann_index", lambda table: "ann deferred")
    assert store.ensure_indexes("chunks") == {"doc_id": "btree created", "vector": "ann deferred"}
    indexed = {tuple(ix.columns): ix.index_type for ix in store.table("chunks").list_indices()}
    assert indexed[("doc_id",)] == "BTree"
    assert not store._has_ann("chunks", store.table("chunks"))
    store.add("chunks", [_chunk("late", 99, "a late row", _unit(99))])  # not in the B-tree yet
    assert [r["chunk_id"] for r in store.vector_search("chunks", _unit(99), 3,
                                                       where="doc_id IN ('late', 'd1')")][0] == "late:c99"
    assert len(store.rows("chunks", "doc_id = 'd1'")) == 10


def test_the_ann_reranks_a_bounded_number_of_candidates():
    from h3.resources.store.lance import REFINE_CANDIDATES, REFINE_FACTOR, ann_search_params

    assert ann_search_params(1_000_000, "IVF_SQ")["refine_factor"] == REFINE_FACTOR  # top 10
    for k in (30, 60):  # text recall's pools: about REFINE_CANDIDATES, never fewer than k
        factor = ann_search_params(1_000_000, "IVF_SQ", k)["refine_factor"]
        assert REFINE_CANDIDATES <= factor * k < REFINE_CANDIDATES + k
    assert ann_search_params(1_000_000, "IVF_SQ", 5)["refine_factor"] == REFINE_FACTOR


def test_ann_parameters_grow_with_the_table():
    from h3.resources.store.lance import ann_build_params, ann_search_params

    small, large = ann_build_params(40_000, 384, "IVF_PQ"), ann_build_params(1_000_000, 384, "IVF_PQ")
    assert small["num_sub_vectors"] == large["num_sub_vectors"] == 48  # 8 dims a sub-vector
    assert large["num_partitions"] > 20 * small["num_partitions"]
    assert ann_search_params(1_000_000, "IVF_PQ")["nprobes"] > ann_search_params(300_000, "IVF_PQ")["nprobes"]
    assert ann_search_params(40_000, "IVF_PQ")["nprobes"] <= small["num_partitions"]
    assert "num_sub_vectors" not in ann_build_params(1_000_000, 384, "IVF_HNSW_SQ")


def test_the_ann_keeps_exact_search_top_10_at_the_shipped_parameters(tmp_path, monkeypatch):
    # a real IVF_PQ index on clustered vectors (many partitions: 1 per 256 rows here), searched
    # through vector_search: >= 0.95 of exact search's top 10, where Lance's own parameters
    # (no re-ranking on the full vectors) keep less
    import h3.resources.store.lance as lance

    monkeypatch.setattr(lance, "ANN_MIN_ROWS", 1_000)
    monkeypatch.setattr(lance, "IVF_ROWS_PER_PARTITION", 256)
    rng = np.random.default_rng(1)
    centres = rng.standard_normal((40, EMBEDDING_DIM)).astype(np.float32)
    vecs = centres[rng.integers(0, 40, 6_000)] + 0.6 * rng.standard_normal(
        (6_000, EMBEDDING_DIM)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)

    def agreement(store) -> float:
        store.add("chunks", [_chunk("d", i, f"row {i}", v) for i, v in enumerate(vecs)])
        store.ensure_indexes("chunks")
        shares = []
        for q in vecs[rng.integers(0, len(vecs), 20)] + 0.05:
            exact = set(np.argsort(-(vecs @ (q / np.linalg.norm(q))))[:10])
            got = {int(h["chunk_id"].split(":c")[1]) for h in store.vector_search("chunks", q, 10)}
            shares.append(len(got & exact) / 10)
        return float(np.mean(shares))

    class LanceDefaults(LanceDocumentStore):
        def ann_build_params(self, rows: int, dim: int) -> dict:
            return {}

        def ann_search_params(self, rows: int, k: int = 10) -> dict:
            return {}

    shipped = agreement(LanceDocumentStore(tmp_path / "shipped"))
    assert shipped >= 0.95
    assert agreement(LanceDefaults(tmp_path / "defaults")) < shipped
