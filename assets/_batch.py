"""Running one stage over every document of a run, one document failing alone.

Runs cover several partitions (BackfillPolicy.single_run()), so each asset loops over
`context.partition_keys`; inputs and outputs are `dict[doc_id, payload]`. A payload carries
`"status": "ok" | "failed"` and `"reason"`; a document that failed upstream is passed through.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from dagster import AssetExecutionContext, MetadataValue

Payload = dict[str, Any]


class DocumentError(Exception):
    """One document cannot go through a stage; the message names the file and the cause."""


def per_document(context: AssetExecutionContext, fn: Callable[..., Payload],
                 *upstreams: dict[str, Payload]) -> dict[str, Payload]:
    """Calls `fn(doc_id, *upstream_payloads)` for each partition of the run; returns the payloads.

    Never raises for one document: its failure (or an upstream one) becomes a failed payload."""
    stage = context.assets_def.key.to_user_string()
    results: dict[str, Payload] = {}
    for doc_id in context.partition_keys:
        inputs = [up.get(doc_id, {"status": "failed", "reason": "missing upstream"})
                  for up in upstreams]
        failed = next((p for p in inputs if p.get("status") != "ok"), None)
        if failed is not None:
            results[doc_id] = {"status": "failed", "reason": failed.get("reason"),
                               "source": failed.get("source")}
            continue
        t0, cpu0 = time.perf_counter(), time.process_time()
        try:
            payload = fn(doc_id, *inputs)
        except Exception as exc:  # one bad document must not stop the others in this run
            source = next((p.get("source") for p in inputs if p.get("source")), doc_id)
            reason = str(exc) if isinstance(exc, DocumentError) else (
                f"{source}: {stage} failed: {type(exc).__name__}: {exc}")
            context.log.warning(reason)
            payload = {"status": "failed", "reason": reason, "source": source}
        payload.setdefault("status", "ok")
        payload["stage_seconds"] = round(time.perf_counter() - t0, 4)
        # CPU of the whole process (every thread: torch/onnxruntime use both cores) meanwhile;
        # unlike wall time it barely grows when other jobs share the machine.
        payload["stage_cpu_seconds"] = round(time.process_time() - cpu0, 4)
        results[doc_id] = payload
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
