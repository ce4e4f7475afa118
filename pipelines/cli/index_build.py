"""`h3 index-build --path DIR [...]`: register every PDF as a document partition and materialise
the ingestion job through Dagster (the persistent instance of this H3_HOME, so runs show in the UI).

Speed: Dagster's per-run cost (~1-2 s) would dominate small documents, so new documents are
ingested `--batch-size` at a time, one run per partition range; every stage handles a document
failure inside the run, so one bad file still fails alone (its partition ends Failed in
`ingested_documents`, the run's last step, and so does the run). If a batch run fails for
another reason (a crash, not a bad document), its documents are retried one run each so that the
culprit is isolated. Files that fail the parser-free checks (empty, not a PDF, truncated) are
recorded as failed without any run when no other file needs one.

With `--compress`, when any document changed, the corpus-level `compress_corpus` job (token PCA
-> chunk pooling -> document index) runs once afterwards, in the same Dagster instance; it is
skipped when the corpus is too small to fit it, and its failure is reported (`compress`, with
what it leaves out), never index-build's. Without it (the default) the report says it was not
requested: recall does not read what it builds (see `ingest`).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext, redirect_stdout
from pathlib import Path

from h3.pipelines.cli.output import CliError, DocumentProgress, Progress, emit, log
from h3.pipelines.executors import EXECUTORS, SCHEDULER_ENV, ScaleOutError, executor_default
from h3.pipelines.ingest_runs import QUIET, execute_batch

# Below this the corpus cannot fit compression: the pooling MLP needs other documents as
# negatives, and PCA to >= 128 dims needs a few chunks' worth of tokens.
COMPRESS_MIN_DOCUMENTS = 2
# What a failed compression leaves out, said with the failure (the documents are ingested and
# every recall mode works without it: `--mode documents` ranks by the pages' evidence).
COMPRESS_FAILED_AFFECTS = ("the document index and chunk summaries were not (re)built: only "
                           "the `hybrid+rerank+summary` bench variant and `h3 bench` rows that "
                           "read them are affected; recall and `h3 ask` are not")
COMPRESS_MIN_CHUNKS = 8


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("index-build", help="ingest the PDFs under the given paths through Dagster")
    p.add_argument("--path", action="append", required=True, help="folder or PDF (repeatable)")
    p.add_argument("--batch-size", type=int, default=16,
                   help="documents per Dagster run (1: one run per document)")
    p.add_argument("--json", action="store_true", help="machine-readable output on stdout")
    p.add_argument("--executor", choices=EXECUTORS, default=None,
                   help="where steps run: this process (default; $H3_EXECUTOR) or a dask cluster")
    p.add_argument("--dask-scheduler", default=None, metavar="tcp://HOST:8786",
                   help="with --executor dask: the cluster's scheduler ($H3_DASK_SCHEDULER); "
                        "none: a LocalCluster of --workers processes for this command")
    p.add_argument("--workers", type=int, default=2, help="LocalCluster size (default 2)")
    p.add_argument("--compress", action="store_true",
                   help="then run the corpus-level compress_corpus job (token PCA, chunk pooling, "
                        "document index); off by default: recall does not need it")
    p.add_argument("--with-kv", action="store_true",
                   help="then prefill each stored document's KV into the cold tier (the "
                        "precompute_kv job, ~10 s per 1K tokens on 2 cores), so that `h3 ask "
                        "--doc` loads it instead of computing it on first use")


def ingest(paths: list[str], batch_size: int = 16, show_progress: bool = False,
           job=None, compress: bool = False, executor: str = "in_process",
           dask_scheduler: str | None = None, workers: int = 2, with_kv: bool = False) -> dict:
    """Registers and ingests; returns the INTERFACES.md index-build report (no printing).

    `job`: the Dagster job to run (default: `ingest_documents` from the code location).
    `compress`: run `compress_corpus` afterwards when something changed (only with the default
    job, whose per-document stages write the token vectors it needs). Off by default: no recall
    mode reads what it builds (`--mode documents` ranks by the pages' evidence), its pooler
    fails its own separation check on a corpus of one industry, and on the 74 development
    filings (6,468 pages) its token PCA and pooling ran out of a 24 GiB machine's memory.
    `with_kv`: then run `precompute_kv` over the documents of `paths` that are stored and have
    no KV indexed yet: those this call stored, and those stored before without it (re-running
    with `--with-kv` over a corpus ingested without it is how a user adds the KV later).
    `executor`: "in_process" (one batch run after another, in this process) or "dask": the
    batches (at most `batch_size` documents, small enough that every worker gets some) run as
    concurrent runs whose steps execute on the cluster at `dask_scheduler`, or on a
    LocalCluster of `workers` processes for this call (pipelines/executors.py compares)."""
    files, missing, empty = _find(paths)  # before the heavy imports: a typo fails at once
    if missing:
        raise CliError(f"--path does not exist: {', '.join(missing)}")
    if not files:
        raise CliError(f"no PDF under {', '.join(paths)} (looked for *.pdf, any case)")
    for path in empty:
        log(f"h3 index-build: warning: no PDF under {path} (looked for *.pdf, any case)")
    from h3.assets._batch import document_listener
    from h3.assets._layout_ahead import layout_ahead
    from h3.pipelines.definitions import RESOURCES, defs
    from h3.pipelines.instance import get_instance
    from h3.pipelines.partitions import add_partitions, contiguous_batches
    from h3.pipelines.registry import register_many
    from h3.resources.store import open_store

    store = open_store()
    instance = get_instance()
    registrations = register_many(store, files)
    todo = [r for r in registrations if r.state in ("new", "retry")]
    prefailed = _precheck(todo)
    if prefailed and len(prefailed) == len(todo):  # nothing a run could store: no run at all
        _record_failures(store, instance, todo, prefailed)
        todo = []
    todo_ids = [r.doc_id for r in todo]
    add_partitions(instance, todo_ids)
    default_job = job is None
    compress = compress and default_job
    job = job or defs.resolve_job_def("ingest_documents")
    files_of = {r.doc_id: r.source for r in todo}
    bar = Progress(len(todo_ids), "index-build", show_progress)
    if executor == "dask" and todo_ids:
        run_ids = _ingest_on_dask(instance, store, todo_ids, files_of, batch_size, bar,
                                  dask_scheduler, workers)
    else:
        run_ids = []
        # a line per document as each stage finishes it (the stages run in this process)
        per_file = (document_listener(DocumentProgress(files_of)) if show_progress
                    else nullcontext())
        batches = contiguous_batches(instance, todo_ids, max(1, batch_size))
        with per_file, layout_ahead() as ahead:
            if ahead is not None:  # later batches' pages, read while earlier runs work
                ahead.submit({d: files_of[d] for batch in batches[1:] for d in batch
                              if files_of.get(d)}, RESOURCES["layout_model"])
            for batch in batches:
                run_ids += execute_batch(job, instance, batch, files_of)
                bar.advance(len(batch), pages=_pages(store, batch))
    bar.close()
    report = _report(store, registrations, run_ids)
    report["paths_without_pdf"] = empty
    if default_job and report["ok"] > 0:  # a second language's vectors (Chinese recall)
        report["multilingual"] = multilingual_vectors(store, instance)
        if report["multilingual"].get("run_id"):
            report["run_ids"].append(report["multilingual"]["run_id"])
    if with_kv:
        report["kv"] = precompute_kv(store, instance, [r.doc_id for r in registrations],
                                     {r.doc_id: r.source for r in registrations}, batch_size)
        report["run_ids"] += report["kv"]["run_ids"]
    if not compress:
        report["compress"] = {"status": "skipped", "run_id": None,
                              "reason": "not requested (h3 index-build --compress, or the "
                                        "compress_corpus job in the UI)"}
    else:
        # Only a stored document changes the corpus: new bytes that fail keep their file's last
        # good version (assets/store.py), and the same bad bytes failing again change nothing.
        report["compress"] = compress_corpus(store, instance, changed=report["ok"] > 0)
        if report["compress"].get("run_id"):
            report["run_ids"].append(report["compress"]["run_id"])
    return report


def precompute_kv(store, instance, doc_ids: list[str], files_of: dict[str, str],
                  batch_size: int) -> dict:
    """The `precompute_kv` job, in batches, over the given documents that are stored (status ok)
    and have no KV of the current format indexed in `kv_blocks` (the job itself skips a stored
    KV, but each run costs seconds of Dagster: a re-run over a prefilled corpus starts none).
    {"documents", "already_stored", "failed_runs", "run_ids"}; a failed run is reported, never
    raised (the documents are ingested either way, and `h3 ask --doc` computes what is missing)."""
    from h3.pipelines.definitions import defs
    from h3.pipelines.partitions import contiguous_batches
    from h3.resources.runtime import KV_FORMAT
    from h3.resources.store.tables import KV_BLOCKS

    ok = set(store.ok_doc_ids())
    stored = {r["doc_id"] for r in store.rows(KV_BLOCKS.name, f"format_version = {KV_FORMAT}",
                                               ["doc_id"])}
    candidates = [d for d in dict.fromkeys(doc_ids) if d in ok]
    todo = [d for d in candidates if d not in stored]
    already = len(candidates) - len(todo)
    job = defs.resolve_job_def("precompute_kv")
    run_ids, failed = [], 0
    for batch in contiguous_batches(instance, todo, max(1, batch_size)):
        log(f"index-build: prefilling the KV of {len(batch)} document(s) ...")
        ids = execute_batch(job, instance, batch, files_of)
        failed += sum(not instance.get_run_by_id(r).is_success for r in ids)
        run_ids += ids
    return {"documents": len(todo), "already_stored": already, "failed_runs": failed,
            "run_ids": run_ids}


def _find(paths: list[str]) -> tuple[list, list[str], list[str]]:
    """(PDFs under the paths, paths that do not exist, folders without any PDF)."""
    from h3.pipelines.registry import find_pdfs

    files, missing, empty = [], [], []
    for given in paths:
        found, gone = find_pdfs([given])
        missing += gone
        if not found and not gone:
            empty.append(given)
        files += found
    return list(dict.fromkeys(files)), missing, empty


def _ingest_on_dask(instance, store, todo_ids: list[str], files_of: dict[str, str],
                    batch_size: int, bar: Progress, address: str | None,
                    workers: int) -> list[str]:
    """The batches as concurrent runs on a dask cluster (pipelines/scaleout.py): batches of at
    most `batch_size`, and at least two per worker so that no worker idles while one finishes."""
    import math

    from h3.pipelines.partitions import contiguous_batches
    from h3.pipelines.scaleout import dask_cluster, run_batches_on_dask

    with dask_cluster(address, workers) as (scheduler, count):
        size = max(1, min(batch_size, math.ceil(len(todo_ids) / (2 * count))))
        batches = contiguous_batches(instance, todo_ids, size)
        return run_batches_on_dask(
            scheduler, batches, files_of, in_flight=2 * count,
            on_done=lambda batch: bar.advance(len(batch), pages=_pages(store, batch)))


def _precheck(todo: list) -> dict[str, str]:
    """doc_id -> reason for the files that fail the parser-free checks (assets.documents)."""
    from h3.assets._batch import DocumentError
    from h3.assets.documents import check_bytes

    failed: dict[str, str] = {}
    for r in todo:
        try:
            check_bytes(Path(r.path).read_bytes(), r.path)
        except DocumentError as exc:
            failed[r.doc_id] = str(exc)
        except OSError as exc:
            failed[r.doc_id] = f"{r.path}: cannot read: {exc.strerror or exc}"
    return failed


def _record_failures(store, instance, todo: list, reasons: dict[str, str]) -> None:
    """What the ingestion run would record for these documents, without a run: a failed row
    (the reason), older failed versions of the same file replaced, last good versions kept."""
    from h3.assets.store import replace_older_versions
    from h3.pipelines.partitions import delete_document_partitions

    for r in todo:
        row = store.get_document(r.doc_id) or {"doc_id": r.doc_id, "source": r.path}
        store.upsert_document({**row, "status": "failed", "reason": reasons[r.doc_id],
                               "updated_at": time.time()})
        for old in replace_older_versions(store, r.doc_id, r.path, keep_ok=True):
            delete_document_partitions(instance, old)


def _pages(store, doc_ids: list[str]) -> int:
    from h3.resources.store import sql_str

    rows = store.rows("documents", f"doc_id IN ({', '.join(sql_str(d) for d in doc_ids)})",
                      ["pages", "status"])
    return sum(int(r.get("pages") or 0) for r in rows if r.get("status") == "ok")


def multilingual_vectors(store, instance) -> dict:
    """Runs the `embed_multilingual` job (asset `multilingual_vectors`) when some stored chunk lacks the e5 vector the config
    wants (assets/multilingual.py: English chunks once the corpus holds Chinese). An English-only
    corpus under the default costs one row read and no run. Never raises for a failed run."""
    from h3.assets._multilingual import chunks_without_vectors
    from h3.pipelines.definitions import defs
    from h3.resources.models.multilingual import configured_mode

    missing = chunks_without_vectors(store, configured_mode())
    if not missing:
        return {"status": "skipped", "reason": "no chunk needs an e5 vector", "run_id": None}
    log(f"index-build: e5 vectors for {len(missing)} chunks (the corpus holds Chinese)")
    result = defs.resolve_job_def("embed_multilingual").execute_in_process(
        run_config=QUIET, instance=instance, raise_on_error=False)
    status = "ok" if result.success else "failed"
    reason = None if result.success else next(
        (ev.message for ev in result.all_events if ev.is_failure), "run failed")[:500]
    if reason:
        log(f"index-build: embed_multilingual run {result.run_id} failed: {reason}")
    return {"status": status, "reason": reason, "run_id": result.run_id}


def compress_corpus(store, instance, changed: bool) -> dict:
    """Runs the `compress_corpus` job once if the corpus changed and is large enough.
    Returns {"status": "ok"|"failed"|"skipped", "reason", "run_id"}; never raises for a failed
    run (the documents are ingested either way; compression can be rerun from the UI)."""
    from h3.pipelines.definitions import defs

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
    return {"status": "failed", "reason": reason, "run_id": result.run_id,
            "affects": COMPRESS_FAILED_AFFECTS}


def _report(store, registrations: list, run_ids: list[str]) -> dict:
    from h3.resources.store import sql_str

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
    from h3.resources.store.lance import StoreUnreachableError

    t0 = time.perf_counter()
    try:
        with stdout_to_stderr():
            report = ingest(args.path, args.batch_size, show_progress=not args.json,
                            executor=args.executor or executor_default(),
                            dask_scheduler=args.dask_scheduler or os.environ.get(SCHEDULER_ENV),
                            workers=args.workers, compress=args.compress,
                            with_kv=args.with_kv)
    except (ScaleOutError, StoreUnreachableError) as exc:  # one line, no traceback
        raise CliError(str(exc)) from None
    report["seconds"] = round(time.perf_counter() - t0, 2)
    lines = [f"{d['status']:>9}  {d['source']}" + (f"  ({d['pages']} pages)" if d["pages"] else "")
             + (f"\n           {d['reason']}" if d["reason"] else "")
             + "".join(f"\n           warning: {w}" for w in d["warnings"])
             for d in report["documents"]]
    lines.append(f"ok {report['ok']}, failed {report['failed']}, unchanged {report['unchanged']}"
                 f" in {report['seconds']} s; Dagster runs: {', '.join(report['run_ids']) or '-'}")
    ml = report.get("multilingual")
    if ml and ml["status"] != "skipped":
        lines.append(f"multilingual_vectors: {ml['status']}"
                     + (f" ({ml['reason']})" if ml["reason"] else ""))
    kv = report.get("kv")
    if kv:
        failed = f", {kv['failed_runs']} run(s) failed" if kv["failed_runs"] else ""
        lines.append(f"precompute_kv: {kv['documents']} document(s) prefilled{failed}, "
                     f"{kv['already_stored']} already stored")
    comp = report.get("compress")
    if comp:
        lines.append(f"compress_corpus: {comp['status']}"
                     + (f" ({comp['reason']})" if comp["reason"] else "")
                     + (f"\n           {comp['affects']}" if comp.get("affects") else ""))
    emit(report, args.json, human="\n".join(lines))
    if args.json:  # stdout is the JSON: each reason once on stderr as well, one line each
        for d in report["documents"]:
            if d["status"] == "failed":
                log(f"h3 index-build: {d['reason']}")
    if report["paths_without_pdf"]:  # a mistyped folder must not pass for a quiet success
        return 2
    return 1 if report["failed"] else 0
