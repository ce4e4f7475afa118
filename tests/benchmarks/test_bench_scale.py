"""The scale bench's corpus: real chunks repeated with new ids and perturbed vectors."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from benchmarks.documents.scale import NOISE, exact_top_k, scaled_chunks, scaled_documents


def _chunks(n: int = 5, dim: int = 384) -> pa.Table:
    rng = np.random.default_rng(0)
    v = rng.standard_normal((n, dim)).astype(np.float32)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    return pa.table({"doc_id": ["d"] * n, "chunk_id": [f"d:c{i}" for i in range(n)],
                     "text": [f"t{i}" for i in range(n)],
                     "vector": pa.FixedSizeListArray.from_arrays(pa.array(v.ravel()), dim)})


def test_copies_get_new_ids_the_same_text_and_nearby_unit_vectors():
    base = _chunks()
    out = pa.concat_tables(scaled_chunks(base, 12, np.random.default_rng(0)))
    assert out.num_rows == 12
    ids = out.column("chunk_id").to_pylist()
    assert len(set(ids)) == 12 and ids[5:7] == ["d~s1:c0", "d~s1:c1"]
    assert out.column("doc_id").to_pylist()[10:] == ["d~s2", "d~s2"]
    assert out.column("text").to_pylist()[5:10] == base.column("text").to_pylist()
    v = np.asarray(out.column("vector").combine_chunks().values).reshape(12, -1)
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    assert np.array_equal(v[:5], np.asarray(base.column("vector").combine_chunks().values).reshape(5, -1))
    cos = np.sum(v[:5] * v[5:10], axis=1)  # a copy stays near its original, never equal
    assert np.all(cos < 0.999) and np.all(cos > 1 / np.sqrt(1 + (2 * NOISE) ** 2))


def test_documents_are_repeated_per_copy_and_exact_search_ranks_by_cosine():
    docs = pa.table({"doc_id": ["a", "b"], "status": ["ok", "ok"]})
    assert scaled_documents(docs, 3).column("doc_id").to_pylist() == ["a", "b", "a~s1", "b~s1",
                                                                         "a~s2", "b~s2"]
    v = np.eye(4, dtype=np.float32)
    top = exact_top_k(v, np.array([[0.1, 0.9, 0.3, 0.0]], np.float32), 2)[0]
    assert top.tolist() == [1, 2]
