"""`h3 index-build --path DIR [...]`: register every PDF as a document partition and materialise
the ingestion job through Dagster (the persistent instance of this H3_HOME, so runs show in the UI).

Speed: Dagster's per-run cost (~1-2 s) would dominate small documents, so new documents are
ingested `--batch-size` at a time, one run per partition range; every stage handles a document
failure inside the run, so one bad file still fails alone. If a whole batch run fails (a crash,
not a bad document), its documents are retried one run each so that the culprit is isolated.

After ingesting, when any document changed, the corpus-level `compress_corpus` job (token PCA ->
chunk pooling -> document index) runs once, in the same Dagster instance; it is skipped when the
corpus is too small to fit it, and its failure is reported (`compress`), never index-build's.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager, redirect_stdout

from pipelines.cli.output import CliError, emit, log, progress

# Dagster's console logger at DEBUG prints every event; the runs' full logs stay in the instance.
QUIET = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}
# Below this the corpus cannot fit compression: the pooling MLP needs other documents as
# negatives, and PCA to >= 128 dims needs a few chunks' worth of tokens.
COMPRESS_MIN_DOCUMENTS = 2
COMPRESS_MIN_CHUNKS = 8


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("index-build", help="ingest the PDFs under the given paths through Dagster")
    p.add_argument("--path", action="append", required=True, help="folder or PDF (repeatable)")
    p.add_argument("--batch-size", type=int, default=16,
                   help="documents per Dagster run (1: one run per document)")
    p.add_argument("--json", action="store_true", help="machine-readable output on stdout")


def ingest(paths: list[str], batch_size: int = 16, show_progress: bool = False,
           job=None, compress: bool | None = None) -> dict:
    """Registers and ingests; returns the INTERFACES.md index-build report (no printing).

    `job`: the Dagster job to run (default: `ingest_documents` from the code location).
    `compress`: run `compress_corpus` afterwards when something changed (default: only with the
    default job, whose per-document stages write the token vectors it needs)."""
    from pipelines.definitions import defs
    from pipelines.instance import get_instance
    from pipelines.partitions import add_partitions, contiguous_batches, range_tags
    from pipelines.registry import find_pdfs, register_many
    from resources.store import open_store

    files, missing = find_pdfs(paths)
    if missing:
        raise CliError(f"--path does not exist: {', '.join(missing)}")
    store = open_store()
    instance = get_instance()
    registrations = register_many(store, files)
    todo = [r.doc_id for r in registrations if r.state in ("new", "retry")]
    add_partitions(instance, todo)
    if compress is None:
        compress = job is None
    job = job or defs.resolve_job_def("ingest_documents")
    run_ids: list[str] = []
    batches = contiguous_batches(instance, todo, max(1, batch_size))
    for batch in progress(batches, len(batches), "ingesting", show_progress):
        result = job.execute_in_process(run_config=QUIET, instance=instance,
                                        tags=range_tags(batch), raise_on_error=False)
        run_ids.append(result.run_id)
        if not result.success and len(batch) > 1:
            log(f"index-build: run {result.run_id} failed; retrying its {len(batch)} documents "
                "one run each")
            for doc_id in batch:
                single = job.execute_in_process(run_config=QUIET, instance=instance,
                                                tags=range_tags([doc_id]), raise_on_error=False)
                run_ids.append(single.run_id)
    report = _report(store, registrations, run_ids)
    if compress:
        # the corpus changed if a document was stored or new bytes came in (even failing, they
        # replace their file's older version); the same bad bytes failing again change nothing
        changed = report["ok"] > 0 or any(r.state == "new" for r in registrations)
        report["compress"] = compress_corpus(store, instance, changed=changed)
        if report["compress"].get("run_id"):
            report["run_ids"].append(report["compress"]["run_id"])
    return report


def compress_corpus(store, instance, changed: bool) -> dict:
    """Runs the `compress_corpus` job once if the corpus changed and is large enough.
    Returns {"status": "ok"|"failed"|"skipped", "reason", "run_id"}; never raises for a failed
    run (the documents are ingested either way; compression can be rerun from the UI)."""
    from pipelines.definitions import defs

    if not changed:
        return {"status": "skipped", "reason": "no document changed", "run_id": None}
    docs = len(store.ok_doc_ids())
    chunks = store.counts().get("chunks", 0)
    if docs < COMPRESS_MIN_DOCUMENTS or chunks < COMPRESS_MIN_CHUNKS:
        return {"status": "skipped", "run_id": None,
                "reason": f"corpus too small to compress ({docs} documents, {chunks} chunks; "
                          f"needs >= {COMPRESS_MIN_DOCUMENTS} and >= {COMPRESS_MIN_CHUNKS})"}
    try:
        result = defs.resolve_job_def("compress_corpus").execute_in_process(
            run_config=QUIET, instance=instance, raise_on_error=False)
    except Exception as exc:  # a broken job definition must not fail the ingestion report
        log(f"index-build: compress_corpus could not run: {exc}")
        return {"status": "failed", "reason": f"compress_corpus: {exc}", "run_id": None}
    if result.success:
        return {"status": "ok", "reason": None, "run_id": result.run_id}
    failures = [ev.message for ev in result.all_events if ev.is_failure]
    reason = (failures[0] if failures else "run failed")[:500]
    log(f"index-build: compress_corpus run {result.run_id} failed: {reason}")
    return {"status": "failed", "reason": reason, "run_id": result.run_id}


def _report(store, registrations: list, run_ids: list[str]) -> dict:
    from resources.store import sql_str

    ids = sorted({r.doc_id for r in registrations if r.doc_id})
    rows = {r["doc_id"]: r for r in store.rows(
        "documents", f"doc_id IN ({', '.join(sql_str(i) for i in ids)})",
        ["doc_id", "status", "reason", "pages", "metadata_json"])} if ids else {}
    documents = []
    for r in registrations:
        row = rows.get(r.doc_id) if r.doc_id else None
        if r.state == "failed":
            status, reason = "failed", r.reason
        elif r.state == "unchanged":
            status, reason = "unchanged", None
        elif row is None or row["status"] != "ok":
            status = "failed"
            reason = (row or {}).get("reason") or f"{r.source}: ingestion did not complete"
        else:
            status, reason = "ok", None
        documents.append({"doc_id": r.doc_id, "source": r.source, "status": status,
                          "pages": (row or {}).get("pages"), "reason": reason,
                          "warnings": _warnings(row) if status != "failed" else []})
    count = {s: sum(d["status"] == s for d in documents) for s in ("ok", "failed", "unchanged")}
    return {"documents": documents, **count, "run_ids": run_ids}


def _warnings(row: dict | None) -> list[str]:
    """The warnings the ingestion stored in a document's metadata (a repaired file, unreadable
    text, pages not OCR'd...); [] for a row without them."""
    try:
        return list(json.loads((row or {}).get("metadata_json") or "{}").get("warnings") or [])
    except (ValueError, AttributeError):
        return []


@contextmanager
def stdout_to_stderr() -> Iterator[None]:
    """Meanwhile, whatever writes to file descriptor 1 (a library's print, PyMuPDF's messages,
    which go to stdout by default, e.g. "find_tables: exception occurred", C code) lands on
    stderr, so that stdout carries the one JSON document and nothing else."""
    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(2, 1)
    try:
        with redirect_stdout(sys.stderr):  # sys.stdout need not write to descriptor 1
            yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


def run(args: argparse.Namespace) -> int:
    t0 = time.perf_counter()
    with stdout_to_stderr():
        report = ingest(args.path, args.batch_size, show_progress=not args.json)
    report["seconds"] = round(time.perf_counter() - t0, 2)
    lines = [f"{d['status']:>9}  {d['source']}" + (f"  ({d['pages']} pages)" if d["pages"] else "")
             + (f"\n           {d['reason']}" if d["reason"] else "")
             + "".join(f"\n           warning: {w}" for w in d["warnings"])
             for d in report["documents"]]
    lines.append(f"ok {report['ok']}, failed {report['failed']}, unchanged {report['unchanged']}"
                 f" in {report['seconds']} s; Dagster runs: {', '.join(report['run_ids']) or '-'}")
    comp = report.get("compress")
    if comp:
        lines.append(f"compress_corpus: {comp['status']}"
                     + (f" ({comp['reason']})" if comp["reason"] else ""))
    emit(report, args.json, human="\n".join(lines))
    for d in report["documents"]:
        if d["status"] == "failed":
            log(f"h3 index-build: {d['reason']}")
    return 1 if report["failed"] else 0
