"""Running one stage over every document of a run, one document failing alone.

Runs cover several partitions (BackfillPolicy.single_run()), so each asset loops over
`context.partition_keys` (readable keys, each naming its doc_id: assets/partitioning.py); inputs
and outputs are `dict[doc_id, payload]`. A payload carries
`"status": "ok" | "failed"` and `"reason"`; a document that failed upstream is passed through.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from dagster import AssetExecutionContext, MetadataValue

from h3.ontology.ids import doc_id_of_partition
from h3.ontology.records import Record

Payload = dict[str, Any]


class DocumentError(Exception):
    """One document cannot go through a stage; the message names the file and the cause."""


# Told of each document a stage has finished, in this process only (`h3 index-build`'s per-file
# progress; steps that run elsewhere, on a dask worker, tell nobody): listener(event), event =
# {"stage", "doc_id", "index" (1-based, in the run's documents), "doc_ids" (the run's),
# "status", "reason", "pages" (when the stage knows them), "seconds"}.
_document_listeners: list[Callable[[dict], None]] = []


@contextmanager
def document_listener(listener: Callable[[dict], None]) -> Iterator[None]:
    """Meanwhile, `listener` hears of every document a stage finishes in this process."""
    _document_listeners.append(listener)
    try:
        yield
    finally:
        _document_listeners.remove(listener)


def document_done(context, doc_ids: list[str], index: int, payload: Payload,
                  stage: str | None = None) -> None:
    """Tells the listeners that the stage (default: the asset's) finished document
    `doc_ids[index - 1]` with `payload`; per_document does it for its stages, a stage that
    works on the whole batch at once calls it itself."""
    if not _document_listeners:
        return
    event = {"stage": stage or context.assets_def.key.to_user_string(),
             "doc_id": doc_ids[index - 1], "index": index, "doc_ids": doc_ids,
             "status": payload.get("status", "ok"), "reason": payload.get("reason"),
             "pages": payload.get("pages"), "seconds": payload.get("stage_seconds", 0.0)}
    for listener in list(_document_listeners):
        try:
            listener(event)
        except Exception as exc:  # a broken progress display must not fail the document
            logging.getLogger(__name__).warning("document progress listener failed: %r", exc)
            context.log.warning(f"document progress listener failed: {exc!r}")


def per_document(context: AssetExecutionContext, fn: Callable[..., Payload | Record],
                 *upstreams: dict[str, Payload],
                 reads: tuple[type, ...] = ()) -> dict[str, Payload]:
    """Calls `fn(doc_id, *upstream_payloads)` for each partition of the run; returns the payloads.

    `reads`: the record type (ontology/records.py) of each upstream, if any: `fn` gets its
    payloads as records (`from_json`) and may return a record (`to_json`), so staged JSON is
    read and written here only. Never raises for one document: its failure (or an upstream
    one) becomes a failed payload."""
    stage = context.assets_def.key.to_user_string()
    results: dict[str, Payload] = {}
    doc_ids = [doc_id_of_partition(k) for k in context.partition_keys]
    for index, doc_id in enumerate(doc_ids, 1):
        inputs = [up.get(doc_id, {"status": "failed", "reason": "missing upstream"})
                  for up in upstreams]
        failed = next((p for p in inputs if p.get("status") != "ok"), None)
        if failed is not None:
            results[doc_id] = {"status": "failed", "reason": failed.get("reason"),
                               "source": failed.get("source")}
            continue
        t0, cpu0 = time.perf_counter(), time.process_time()
        try:
            args = ([cls.from_json(p) for cls, p in zip(reads, inputs, strict=True)] if reads
                    else inputs)
            payload = fn(doc_id, *args)
            if not isinstance(payload, dict):
                payload = payload.to_json()
        except Exception as exc:  # one bad document must not stop the others in this run
            source = next((p.get("source") for p in inputs if p.get("source")), doc_id)
            reason = str(exc) if isinstance(exc, DocumentError) else (
                f"{source}: {stage} failed: {type(exc).__name__}: {exc}")
            context.log.warning(reason)
            payload = {"status": "failed", "reason": reason, "source": source}
        payload.setdefault("status", "ok")
        payload["stage_seconds"] = round(
            time.perf_counter() - t0 + payload.pop("worker_seconds", 0.0), 4)
        # whole process (every thread: torch/onnxruntime use both cores), plus what a document
        # worker spent on it (per_document_on_workers); unlike wall time it barely grows when
        # other jobs share the machine.
        payload["stage_cpu_seconds"] = round(
            time.process_time() - cpu0 + payload.pop("worker_cpu_seconds", 0.0), 4)
        results[doc_id] = payload
        document_done(context, doc_ids, index, payload, stage)
    return results


def summary_metadata(results: dict[str, Payload], count_key: str | None = None,
                     preview: list[dict] | None = None) -> dict[str, Any]:
    """Counts, timings and a small markdown preview for the Dagster UI."""
    ok = [p for p in results.values() if p.get("status") == "ok"]
    meta: dict[str, Any] = {
        "documents_ok": len(ok),
        "documents_failed": len(results) - len(ok),
        "seconds": round(sum(p.get("stage_seconds", 0.0) for p in results.values()), 3),
        "cpu_seconds": round(sum(p.get("stage_cpu_seconds", 0.0) for p in results.values()), 3),
    }
    pages = sum(int(p.get("pages", 0) or 0) for p in ok)
    if pages:
        meta["pages"] = pages
    if count_key:
        meta[count_key] = sum(len(p.get(count_key) or []) for p in ok)
    failures = [p.get("reason") for p in results.values() if p.get("status") != "ok"]
    if failures:
        meta["failures"] = MetadataValue.md("\n".join(f"- {r}" for r in failures[:20]))
    if preview:
        meta["preview"] = MetadataValue.md(markdown_table(preview))
    return meta


def markdown_table(rows: list[dict], max_rows: int = 10, max_chars: int = 80) -> str:
    if not rows:
        return "(empty)"
    cols = list(rows[0])
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for row in rows[:max_rows]:
        cells = [str(row.get(c, "")).replace("|", "\\|").replace("\n", " ")[:max_chars]
                 for c in cols]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


# Run tags are for people scanning the runs list; a long batch lists its first files only.
MAX_TAG_CHARS = 200


def file_names(sources: list[str | None]) -> str:
    """"a.pdf, b.pdf (+3 more)": the files of a run, short enough for a run tag."""
    names = [Path(s).name for s in sources if s]
    text, shown = "", 0
    for name in names:
        candidate = f"{text}, {name}" if text else name
        if len(candidate) > MAX_TAG_CHARS:
            break
        text, shown = candidate, shown + 1
    return text + (f" (+{len(names) - shown} more)" if shown < len(names) else "")


def tag_run_with_files(context: AssetExecutionContext, sources: list[str | None]) -> None:
    """Names the run's files in its tags (`h3/files`, and `h3/file` for a one-document run),
    so the runs list and the run page say which PDFs a run is about, not only their ids."""
    tags = {"h3/files": file_names(sources)}
    if len(sources) == 1 and sources[0]:
        tags["h3/file"] = Path(sources[0]).name
    context.instance.add_run_tags(context.run_id, tags)


def per_document_on_workers(context: AssetExecutionContext, fn: Callable[..., Record],
                            upstreams: tuple[dict[str, Payload], ...], reads: tuple[type, ...],
                            cost_s: Callable[[tuple], float],
                            args_of: Callable[[str, tuple], tuple] | None = None,
                            ) -> dict[str, Payload]:
    """per_document, with `fn(*args_of(doc_id, records))` (default: the upstream records) for
    every document computed at once on the document workers (resources/document_workers.py).
    `fn` is a module-level function returning a record; `cost_s(records)` estimates one
    document's seconds on one core. Failures, progress and timings as per_document's."""
    from h3.resources.document_workers import map_documents

    args: dict[str, tuple] = {}
    costs: dict[str, float] = {}
    for doc_id in (doc_id_of_partition(k) for k in context.partition_keys):
        inputs = [up.get(doc_id) or {} for up in upstreams]
        if any(p.get("status") != "ok" for p in inputs):
            continue  # per_document passes the upstream failure on
        try:
            records = tuple(cls.from_json(p) for cls, p in zip(reads, inputs, strict=True))
        except Exception:  # noqa: BLE001, S112 - per_document reads it again and says why
            continue
        args[doc_id] = args_of(doc_id, records) if args_of else records
        costs[doc_id] = cost_s(records)
    outcomes = map_documents(fn, args, costs)

    def result_of(doc_id: str, *payloads: Payload) -> Payload:
        pending = outcomes.get(doc_id)
        if pending is None:  # records that would not read: read here, to fail as per_document
            records = tuple(cls.from_json(p) for cls, p in zip(reads, payloads, strict=True))
            return fn(*(args_of(doc_id, records) if args_of else records)).to_json()
        outcome = pending.result()
        if outcome.error is not None:
            raise outcome.error
        return {**outcome.value.to_json(), "worker_seconds": outcome.seconds,
                "worker_cpu_seconds": outcome.cpu_seconds}

    return per_document(context, result_of, *upstreams)
