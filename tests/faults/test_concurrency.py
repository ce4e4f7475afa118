"""20 `h3 recall` processes and 4 `h3 ask` processes at once on one store: all succeed, and
every answer is the same as a recall run alone (LanceDB readers never see a torn table).
Wall time and the largest child's peak memory go to test-artifacts/concurrency.json."""

from __future__ import annotations

import json
import resource
import shutil
import time
from pathlib import Path

import pytest

from tests.faults.helpers import kill_group, start_h3

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
QUERIES = ["What was the total revenue in 2023?", "Where are flammable solvents stored?",
           "corrosion found on pier seven", "Show me the table of quarterly results"]


def _run_all(procs, timeout_s: float) -> list[tuple[int, str, str]]:
    results, deadline = [], time.monotonic() + timeout_s
    try:
        for p in procs:
            out, err = p.communicate(timeout=max(1.0, deadline - time.monotonic()))
            results.append((p.returncode, out, err))
    finally:
        for p in procs:
            if p.poll() is None:
                kill_group(p)
    return results


@pytest.mark.slow
def test_20_recalls_then_4_asks_concurrently(machine_to_itself, ingested_sample, default_model_dir,
                                             tmp_path):
    home = tmp_path / "h3"
    shutil.copytree(ingested_sample["home"], home)  # ask may store KV: never write the shared one
    # the model converted once, as in any H3_HOME after its first ask: the asks below measure
    # concurrent questions, not four concurrent one-time conversions (~1 min each on 2 cores)
    from h3_runtime.models import default_model_dir as converted_dir
    from tests.conftest import h3_home_env

    with h3_home_env(home):
        shutil.copytree(default_model_dir, converted_dir(), dirs_exist_ok=True)
    t0 = time.perf_counter()
    recalls = [start_h3(["recall", QUERIES[i % len(QUERIES)], "--k", "3", "--json"], home)
               for i in range(20)]
    recall_results = _run_all(recalls, 900)
    recall_s = time.perf_counter() - t0
    failures = [(rc, err[-500:]) for rc, _, err in recall_results if rc != 0]
    assert not failures, failures
    by_query: dict[str, set] = {}
    for _rc, out, _ in recall_results:
        (answer,) = json.loads(out)
        assert answer["hits"], answer["query"]
        by_query.setdefault(answer["query"], set()).add(
            json.dumps([(h["doc_id"], h["page"], h["text"]) for h in answer["hits"]]))
    assert all(len(v) == 1 for v in by_query.values())  # identical answers to identical queries

    t1 = time.perf_counter()
    asks = [start_h3(["ask", QUERIES[i], "--max-new-tokens", "8", "--k", "2", "--json"], home)
            for i in range(4)]
    ask_results = _run_all(asks, 900)
    ask_s = time.perf_counter() - t1
    failures = [(rc, err[-1500:]) for rc, _, err in ask_results if rc != 0]
    assert not failures, failures
    for _, out, _ in ask_results:
        answer = json.loads(out)
        assert answer["evidence"] and answer["stats"]["integrity_errors"] == 0
        assert isinstance(answer["answer"], str)

    peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / "concurrency.json").write_text(json.dumps({
        "recall_processes": 20, "recall_wall_s": round(recall_s, 1),
        "ask_processes": 4, "ask_wall_s": round(ask_s, 1),
        "largest_child_peak_rss_mb": round(peak_mb)}, indent=2))
