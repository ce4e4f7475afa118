"""kill -9 in the middle of an ingestion run, then the same command again: the store ends
consistent (one row per document, no duplicate chunks/regions/edges/nodes, per-document row
counts equal to what the document recorded) and, in between, recall never shows a half-written
document."""

from __future__ import annotations

import json
import random
import time
from collections import Counter

import pytest

from tests.conftest import h3_home_env
from tests.faults.helpers import kill_group, start_h3
from tests.pipelines.test_sensors import one_page_pdf

TOPICS = ["Kestrel audit. The Oslo warehouse lost 41 pallets in the flood.",
          "Heron contract. Payment of 7,500 euros is due on 12 August 2025."]


def _wait_for(predicate, proc, timeout_s: float, what: str, poll_s: float = 0.2) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if proc.poll() is not None:
            raise AssertionError(f"index-build ended (rc {proc.returncode}) before {what}: "
                                 f"{proc.stderr.read()[-2000:]}")
        if time.monotonic() > deadline:
            kill_group(proc)
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(poll_s)


def _assert_consistent(store) -> None:
    docs = store.rows("documents")
    assert len({d["doc_id"] for d in docs}) == len(docs), "duplicate documents rows"
    for table, key in (("chunks", "chunk_id"), ("regions", "region_id"), ("edges", "edge_id"),
                       ("entities", "entity_id")):
        ids = Counter(r[key] for r in store.rows(table, columns=[key]))
        assert not [k for k, n in ids.items() if n > 1], f"duplicate {table} rows"
    for doc in docs:
        if doc["status"] != "ok":
            continue
        counts = json.loads(doc["metadata_json"])["counts"]
        for table in ("chunks", "regions"):
            stored = store.count_rows(table) and len(store.rows(
                table, f"doc_id = '{doc['doc_id']}'", [table[:-1] + "_id"]))
            assert stored == counts[table], (doc["doc_id"], table, stored, counts[table])


@pytest.mark.slow
def test_kill_9_mid_ingestion_then_rerun(tmp_path):
    from h3.resources.recall import recall
    from h3.resources.store import open_store

    corpus, home = tmp_path / "corpus", tmp_path / "h3"
    corpus.mkdir()
    for i, text in enumerate(TOPICS):
        one_page_pdf(corpus / f"doc{i}.pdf", text)
    args = ["index-build", "--path", str(corpus), "--json"]
    proc = start_h3(args, home)
    staged = home / "staging"
    try:  # both documents embedded (one run, batch of 2): kill -9 as they are being stored
        # Polled tightly: on an idle machine storing two one-page documents takes well under a
        # second, and a kill that lands after it no longer tests a half-finished run.
        _wait_for(lambda: len(list(staged.glob("embeddings/*.json"))) >= 2, proc, 300,
                  "the documents were embedded", poll_s=0.01)
        time.sleep(random.uniform(0.0, 0.05))  # somewhere in cold_store or just before it
    finally:
        kill_group(proc)
    assert proc.returncode == -9

    with h3_home_env(home):
        store = open_store()
        _assert_consistent(store)
        ok = store.ok_doc_ids()
        assert len(ok) < 2  # the run died before finishing
        for result in recall(store, TOPICS, k=5):
            assert {h["doc_id"] for h in result["hits"]} <= ok  # nothing half-written shows

    rerun = start_h3(args, home)
    out, err = rerun.communicate(timeout=400)
    assert rerun.returncode == 0, err[-3000:]
    report = json.loads(out)
    assert report["failed"] == 0 and report["ok"] + report["unchanged"] == 2
    with h3_home_env(home):
        store = open_store()
        _assert_consistent(store)
        assert len(store.ok_doc_ids()) == 2 and store.count_rows("documents") == 2
        for text, result in zip(TOPICS, recall(store, TOPICS, k=1), strict=True):
            assert result["hits"] and result["hits"][0]["text"].startswith(text.split(".")[0])
