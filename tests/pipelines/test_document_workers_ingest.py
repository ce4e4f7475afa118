"""`h3 index-build` with its per-document stages on worker processes (knowledge-graph NER,
tables, figures, OCR) stores what one process stores."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.conftest import h3_home_env


def _graph(store) -> dict:
    names = {r["doc_id"]: Path(r["source"]).name for r in store.rows("documents")}
    return {
        "edges": sorted((names[r["doc_id"]], r["page"], tuple(round(v, 3) for v in r["bbox"]),
                         r["relation"], r["sentence"])
                        for r in store.rows("edges", columns=["doc_id", "page", "bbox",
                                                                "relation", "sentence"])),
        "entities": sorted(r["entity_id"] for r in store.rows("entities",
                                                                columns=["entity_id"])),
        "tables": sorted((names[r["doc_id"]], r["page"], r["text"] or "")
                         for r in store.rows("regions", "kind = 'table'",
                                             ["doc_id", "page", "text"])),
        "figures": sorted((names[r["doc_id"]], r["page"], r["text"] or "")
                          for r in store.rows("regions", "kind = 'figure'",
                                              ["doc_id", "page", "text"])),
    }


@pytest.mark.slow
def test_workers_store_what_one_process_stores(ingested_sample, tmp_path, monkeypatch):
    from h3.assets import entities
    from h3.pipelines.cli.index_build import ingest
    from h3.resources import document_workers
    from h3.resources.store import open_store

    with h3_home_env(ingested_sample["home"]):
        expected = _graph(open_store())
    assert expected["edges"] and expected["tables"] and expected["figures"]
    used: list[int] = []
    real_map = document_workers.map_documents

    def counted_map(fn, args_by_doc, cost_s):
        pending = real_map(fn, args_by_doc, cost_s)
        used.append(sum(p._future is not None for p in pending.values()))
        return pending

    monkeypatch.setattr(document_workers, "cpu_threads", lambda: 2)
    monkeypatch.setattr(document_workers, "START_S", 0.0)  # the sample corpus is small
    monkeypatch.setattr(document_workers, "map_documents", counted_map)
    monkeypatch.setattr(entities, "map_documents", counted_map)
    corpus = shutil.copytree(ingested_sample["corpus"], tmp_path / "corpus")
    try:
        with h3_home_env(tmp_path / "h3"):
            report = ingest([str(corpus)])
            assert report["failed"] == 0, report
            assert _graph(open_store()) == expected
    finally:
        document_workers.shutdown()
    # the knowledge graph's, tables', figures' and OCR's documents all went to the workers
    assert len(used) == 4 and all(n == report["ok"] for n in used), used
