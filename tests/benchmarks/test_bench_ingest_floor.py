"""`h3 bench --scenario ingest_floor --path DIR`: the pipeline and the naive floor on one folder."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.documents.ingest_floor import run

SAMPLE = Path(__file__).resolve().parents[1] / "fixtures" / "sample_corpus"


def test_a_folder_is_required_and_must_hold_pdfs(tmp_path):
    with pytest.raises(FileNotFoundError, match="--path"):
        run(tmp_path, quick=True)
    with pytest.raises(FileNotFoundError, match="no PDF"):
        run(tmp_path, quick=True, path=str(tmp_path))


@pytest.mark.slow
def test_quick_run_measures_both_sides_on_the_same_pdfs(tmp_path):
    report = run(tmp_path, quick=True, path=str(SAMPLE))
    floor = report["naive_floor"]
    assert report["documents_ok"] == 3 and report["documents_failed"] == 0
    assert report["pages"] == floor["pages"] > 0  # the same pages on both sides
    assert report["share_of_floor"] == pytest.approx(
        report["pages_per_s"] / floor["pages_per_s"], abs=1e-3)
    stages = {s["stage"]: s for s in report["stages"]}
    assert {"layout", "embeddings", "cold_store"} <= set(stages)
    assert all(s["wall_s"] >= 0 for s in stages.values())
    assert stages["embeddings"]["cpu_s"] > 0  # from the run's metadata (staging is cleared)
    assert report["pages_per_s"] == pytest.approx(report["pages"] / report["pipeline_wall_s"],
                                                  rel=0.01)
    assert 0.0 <= report["cpu_utilisation"]["all_cores_busy_share"] <= 1.0
    assert not list(SAMPLE.glob("*.json"))  # nothing written into the source folder
