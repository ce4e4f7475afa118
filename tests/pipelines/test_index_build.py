"""`h3 index-build` end to end through the persistent Dagster instance: the sample corpus is
stored, recall finds known facts on the right page, bad inputs fail alone, re-runs add nothing,
and a changed file replaces its old version."""

from __future__ import annotations

import json

import pytest

from tests.conftest import FIXTURES, h3_home_env
from tests.fixtures.make_sample_corpus import lab_handbook, write_bad_inputs


def _sample_queries() -> list[dict]:
    lines = (FIXTURES / "recall_queries.jsonl").read_text().splitlines()
    return [q for q in map(json.loads, lines) if q["corpus"] == "sample"]


@pytest.mark.slow
def test_sample_corpus_is_ingested_through_dagster(ingested_sample):
    report = ingested_sample["report"]
    assert (report["ok"], report["failed"], report["unchanged"]) == (3, 0, 0)
    assert sum(d["pages"] for d in report["documents"]) == 7
    with h3_home_env(ingested_sample["home"]):
        from h3.pipelines.instance import get_instance

        runs = {r.run_id: r for r in get_instance().get_runs()}
        assert set(report["run_ids"]) <= set(runs)
        # documents changed and 3 documents are enough: compression ran once, last, in Dagster
        compress = report["compress"]
        assert compress["status"] == "ok", compress
        assert report["run_ids"][-1] == compress["run_id"]
        assert runs[compress["run_id"]].job_name == "compress_corpus"
        assert all(runs[i].job_name == "ingest_documents" for i in report["run_ids"][:-1])


class _TinyStore:
    """Stands in for the store in the skip rules only (the real run is tested above)."""

    def __init__(self, docs: int, chunks: int) -> None:
        self.docs, self.chunks = docs, chunks

    def ok_doc_ids(self) -> set[str]:
        return {f"d{i}" for i in range(self.docs)}

    def counts(self) -> dict[str, int]:
        return {"chunks": self.chunks}


def test_compression_is_skipped_when_nothing_changed_or_corpus_is_tiny():
    from h3.pipelines.cli.index_build import compress_corpus

    unchanged = compress_corpus(_TinyStore(50, 500), instance=None, changed=False)
    assert unchanged == {"status": "skipped", "reason": "no document changed", "run_id": None}
    tiny = compress_corpus(_TinyStore(1, 500), instance=None, changed=True)
    assert tiny["status"] == "skipped" and "too small" in tiny["reason"]
    assert compress_corpus(_TinyStore(5, 3), None, True)["status"] == "skipped"


@pytest.mark.slow
def test_recall_finds_known_facts_on_the_right_page(ingested_sample):
    from h3.resources.recall import recall
    from h3.resources.store import open_store

    store = open_store(str(ingested_sample["home"] / "lancedb"))
    queries = _sample_queries()
    results = recall(store, [q["query"] for q in queries], k=3)
    misses = []
    for q, r in zip(queries, results, strict=True):
        found = [(h["source"].rsplit("/", 1)[-1], h["page"]) for h in r["hits"]]
        if (q["source"], q["page"]) not in found:
            misses.append((q["query"], found))
        for h in r["hits"]:
            assert h["page"] >= 1 and len(h["bbox"]) == 4
            assert h["via"] in ("text", "structure", "relation")
            assert 0 <= h["bbox"][0] < h["bbox"][2] <= 596 and 0 <= h["bbox"][1] < h["bbox"][3]
    assert not misses, misses
    scanned = results[[q["query"] for q in queries].index("corrosion found on pier seven")]
    assert scanned["hits"][0]["kind"] == "ocr_text"


@pytest.mark.slow
def test_bad_inputs_fail_alone_rerun_is_idempotent_and_changes_replace(h3_home, tmp_path):
    from h3.pipelines.cli.index_build import ingest
    from h3.pipelines.cli.main import main
    from h3.resources.store import open_store

    corpus = tmp_path / "docs"
    corpus.mkdir()
    lab_handbook(corpus / "handbook.pdf")
    bad = write_bad_inputs(corpus / "bad", corpus / "handbook.pdf")
    # batches of 2: the later batches' pages go to the background layout reader first
    # (assets/_layout_ahead.py), bad files included, and each still fails alone, with its reason
    first = ingest([str(corpus)], batch_size=2)
    by_source = {d["source"]: d for d in first["documents"]}
    assert by_source[str(corpus / "handbook.pdf")]["status"] == "ok"
    for kind, path in bad.items():
        entry = by_source[str(path)]
        assert entry["status"] == "failed", kind
        assert str(path) in entry["reason"], entry["reason"]
    assert "encrypted" in by_source[str(bad["encrypted"])]["reason"]
    assert "empty file" in by_source[str(bad["empty"])]["reason"]
    assert (first["ok"], first["failed"]) == (1, 4)
    # not asked for (index-build's default): said so, no compress_corpus run
    assert first["compress"]["status"] == "skipped" and "--compress" in first["compress"]["reason"]
    # English only under the shipped `multilingual_embedding: auto`: no e5 run, no e5 vectors
    assert first["multilingual"]["status"] == "skipped"
    assert open_store().count_rows("chunks_ml") == 0
    assert main(["index-build", "--path", str(corpus), "--json"]) == 1  # some failed: exit 1

    store = open_store()
    counts = store.counts()
    again = ingest([str(corpus)])
    assert by_status(again) == {"unchanged": 1, "failed": 4}
    assert store.counts() == counts  # nothing added

    old_id = by_source[str(corpus / "handbook.pdf")]["doc_id"]
    text = (corpus / "handbook.pdf").read_bytes()
    (corpus / "handbook.pdf").write_bytes(text.replace(b"Thursday", b"Saturday"))
    if (corpus / "handbook.pdf").read_bytes() == text:  # compressed stream: rewrite the file
        import pymupdf

        doc = pymupdf.open()
        doc.new_page().insert_text((72, 72), "Halogenated waste is collected every Saturday.")
        doc.save(corpus / "handbook.pdf")
    changed = ingest([str(corpus)])
    new_entry = next(d for d in changed["documents"] if d["source"].endswith("handbook.pdf"))
    assert new_entry["status"] == "ok" and new_entry["doc_id"] != old_id
    for table in store.doc_scoped_tables():
        assert store.rows(table, f"doc_id = '{old_id}'") == [], table
    assert store.count_rows("documents") == counts["documents"]

    # overwritten by a broken copy: the new bytes fail alone, the last good version stays
    good_id, good_chunks = new_entry["doc_id"], store.count_rows("chunks")
    (corpus / "handbook.pdf").write_bytes((corpus / "handbook.pdf").read_bytes()[:200])
    broken = ingest([str(corpus)])
    entry = next(d for d in broken["documents"] if d["source"].endswith("handbook.pdf"))
    assert entry["status"] == "failed" and "truncated" in entry["reason"]
    assert store.rows("documents", f"doc_id = '{good_id}'", ["status"]) == [{"status": "ok"}]
    assert store.count_rows("chunks") == good_chunks


def by_status(report: dict) -> dict:
    out: dict[str, int] = {}
    for d in report["documents"]:
        out[d["status"]] = out.get(d["status"], 0) + 1
    return out


@pytest.mark.slow
def test_cli_recall_and_stats_json(ingested_sample, capsys):
    from h3.pipelines.cli.main import main

    with h3_home_env(ingested_sample["home"]):
        assert main(["stats", "--json"]) == 0
        stats = json.loads(capsys.readouterr().out)
        assert stats["documents"] == {"ok": 3}
        assert stats["tables"]["documents"] == 3 and stats["tables"]["chunks"] > 0
        assert stats["bytes_on_disk"] > 0
        assert main(["recall", "who was on the bridge inspection team?", "B214", "  ", "--k",
                     "2", "--mode", "text", "--json"]) == 0
        results = json.loads(capsys.readouterr().out)
    assert [r["query"] for r in results] == ["who was on the bridge inspection team?", "B214",
                                             "  "]
    assert results[2]["hits"] == [] and results[2]["note"] == "empty query"
    first = results[0]["hits"][0]
    assert first["source"].endswith("field_notes_scan.pdf") and first["page"] == 1
    assert set(first) >= {"doc_id", "source", "page", "bbox", "kind", "text", "score", "via"}
    assert results[1]["hits"][0]["source"].endswith("lab_handbook.pdf")
