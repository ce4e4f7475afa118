"""Shared by the structure and relation benchmarks: ingestion with and without the semantic
stages side by side, and the corpus-level compression job, each into its own H3_HOME."""

from __future__ import annotations

import time
from pathlib import Path

from benchmarks.documents.ingest import core_job, ingest_variant, warm_models
from h3.pipelines.instance import h3_home_env

SEMANTIC_STEPS = ("knowledge_graph", "structures", "figure_embeddings", "token_vectors")


def warm_all() -> float:
    """Loads every model (layout, OCR, SBERT, spaCy) once; returns the seconds."""
    from h3.resources.nlp.pipeline import english

    t0 = time.perf_counter()
    warm_models()
    english()("Warm up the pipeline.")
    return time.perf_counter() - t0


def compress(home: Path) -> dict:
    """Runs `compress_corpus` (PCA -> pooling -> document index + checks) in that H3_HOME."""
    from h3.pipelines.runs import run_job

    with h3_home_env(home):
        report = run_job("compress_corpus")
    report.pop("run_id")
    return report


def ingest_side_by_side(work: Path, corpus: Path) -> dict:
    """Ingestion without the semantic stages, then with them (+ the compression job), on the
    same files, each into a fresh H3_HOME in this process, models already loaded."""
    core = ingest_variant(work / "core", corpus, 16, core_job())
    full = ingest_variant(work / "full", corpus, 16, None)
    comp = compress(work / "full")
    per_doc = sum(s for k, s in full["stage_s"].items() if k.startswith(SEMANTIC_STEPS))
    core_in_full = sum(s for k, s in full["stage_s"].items() if not k.startswith(SEMANTIC_STEPS))
    added = full["wall_s"] + comp["wall_s"] - core["wall_s"]
    return {
        "core_wall_s": core["wall_s"], "full_wall_s": full["wall_s"],
        "compress_wall_s": comp["wall_s"], "pages": core["pages"],
        "semantic_per_document_stage_s": round(per_doc, 2),
        "core_stage_s_in_full_run": round(core_in_full, 2),
        # The headline: our stages (per-document steps + the compression job's steps) over the
        # ingestion steps of the same run, step time on both sides (Dagster's own overhead is in
        # neither). Measured inside one run, it is robust to the load of a shared machine,
        # unlike the two walls below (which include Dagster's overhead on both sides).
        "added_fraction": round((per_doc + comp["stage_s"]) / max(core_in_full, 1e-9), 3),
        "added_s_wall": round(added, 2),
        "added_fraction_wall": round(added / core["wall_s"], 3) if core["wall_s"] else None,
        "core_stage_s": core["stage_s"],
        "full_stage_s": full["stage_s"],
        "compress": comp,
        "home": str(work / "full"),
    }
