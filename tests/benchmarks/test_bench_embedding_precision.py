"""The ingest bench's precision comparison rewrites a store's chunk vectors (real LanceDB; the
embedder is a deterministic test double, the real int8/fp32 models are tested in
tests/resources/test_embedder_precision.py)."""

from __future__ import annotations

import json

import numpy as np

from benchmarks.documents.embedding_precision import reembed_store
from benchmarks.documents.ingest import stage_cpu_seconds
from h3.resources.store import open_store


class OneHotEmbedder:
    """Text i of a call -> unit vector e_(len(text) % 384)."""

    def encode(self, texts):
        out = np.zeros((len(texts), 384), dtype=np.float32)
        for i, text in enumerate(texts):
            out[i, len(text) % 384] = 1.0
        return out


def test_reembed_store_replaces_vectors_and_keeps_full_text(h3_home):
    store = open_store()
    texts = ["the pump pressure is four bar", "corrosion on the third pier"]
    store.add("chunks", [{"doc_id": "d", "chunk_id": f"d:c{i}", "page": i + 1, "bbox": [1, 2, 3, 4],
                          "text": t, "section": "Intro", "kind": "text", "token_count": 5,
                          "region_ids": [], "vector": [0.0] * 384} for i, t in enumerate(texts)])
    store.ensure_indexes("chunks")
    assert reembed_store(h3_home, OneHotEmbedder()) == 2
    rows = {r["chunk_id"]: r for r in store.rows("chunks")}
    for i, text in enumerate(texts):
        vector = np.asarray(rows[f"d:c{i}"]["vector"])
        assert vector.argmax() == len(f"Intro\n{text}") % 384 and vector.max() == 1.0
    assert [r["chunk_id"] for r in store.text_search("chunks", "corrosion", 5)] == ["d:c1"]


def test_stage_cpu_seconds_sums_staged_payloads(tmp_path):
    for asset, doc, seconds in (("layout", "a", 1.5), ("layout", "b", 0.5), ("chunks", "a", 0.25)):
        folder = tmp_path / "staging" / asset
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{doc}.json").write_text(json.dumps({"stage_cpu_seconds": seconds}))
    (tmp_path / "staging" / "chunks" / "c.json").write_text(json.dumps({"status": "failed"}))
    assert stage_cpu_seconds(tmp_path) == {"layout": 2.0, "chunks": 0.25}
