"""The inbox sensor: PDFs dropped into the inbox ($H3_INBOX, default $H3_HOME/inbox) are
registered and ingested; a changed PDF is ingested again and replaces its old version; a PDF
removed from the inbox is deleted from the store (rows, graph nodes, crops, KV, partition).

It is off by default so tests and the CLI never race it: turn it on in the UI (Automation).
The cursor remembers each file's (mtime_ns, size, doc_id), so a tick only hashes files whose
stat changed, and it knows which documents vanished since the last tick.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from dagster import (
    DefaultSensorStatus,
    RunRequest,
    SensorEvaluationContext,
    SensorResult,
    SkipReason,
    sensor,
)

from h3.pipelines.deletion import delete_documents
from h3.pipelines.jobs import ingest_job
from h3.pipelines.partitions import add_partitions, contiguous_batches, range_tags
from h3.pipelines.registry import find_pdfs, register
from h3.resources.store import open_store
from h3_runtime.home import under_home

INBOX_ENV = "H3_INBOX"
# A file modified this recently may still be being copied in: wait for the next tick.
SETTLE_SECONDS = 2.0
BATCH_SIZE = 16  # documents per ingestion run, as `h3 index-build --batch-size`


def inbox_dir() -> Path:
    """$H3_INBOX if set, else $H3_HOME/inbox (created)."""
    configured = os.environ.get(INBOX_ENV)
    inbox = Path(configured).expanduser().resolve() if configured else under_home("inbox")
    inbox.mkdir(parents=True, exist_ok=True)
    return inbox


def load_cursor(cursor: str | None) -> dict[str, list]:
    """{absolute path: [mtime_ns, size, doc_id]} from the sensor's cursor (empty when unset)."""
    if not cursor:
        return {}
    return dict(json.loads(cursor).get("files", {}))


def scan_inbox(context: SensorEvaluationContext, inbox: Path) -> SensorResult | SkipReason:
    """One tick: what is new or changed gets a run of `ingest_documents`, what vanished one run
    of `delete_documents`; the cursor always records what was seen."""
    seen = load_cursor(context.cursor)
    files, _ = find_pdfs([str(inbox)])
    store = open_store()
    current: dict[str, list] = {}
    ingest: list[tuple[str, int]] = []
    for path in files:
        try:
            st = path.stat()
        except OSError:  # removed between listing and stat: treated as gone
            continue
        key, signature = str(path.resolve()), [st.st_mtime_ns, st.st_size]
        previous = seen.get(key)
        if previous and previous[:2] == signature:
            current[key] = previous
            continue
        if time.time() - st.st_mtime < SETTLE_SECONDS:
            if previous:
                current[key] = previous  # still being written: keep the old state one more tick
            continue
        registration = register(store, path)
        current[key] = [*signature, registration.doc_id]
        if registration.state in ("new", "retry"):
            ingest.append((registration.doc_id, st.st_mtime_ns))
        elif registration.state == "failed":
            context.log.warning(f"inbox: {registration.reason}")
    gone = _vanished(store, seen, current)

    run_requests = ingest_requests(context.instance, dict(ingest))
    if gone:
        run_requests.append(RunRequest(
            job_name=delete_documents.name, run_key=f"delete:{','.join(gone)}:{time.time_ns()}",
            run_config={"ops": {"delete_documents_op": {"config": {
                "doc_ids": gone, "reason": "removed from the inbox"}}}},
            tags={"h3/trigger": "inbox"}))
    cursor = json.dumps({"files": current}, sort_keys=True)
    if not run_requests:
        context.update_cursor(cursor)
        return SkipReason(f"inbox {inbox}: {len(current)} PDFs, nothing new, changed or removed")
    return SensorResult(run_requests=run_requests, cursor=cursor)


def ingest_requests(instance, mtimes: dict[str, int]) -> list[RunRequest]:
    """One run per batch of up to BATCH_SIZE documents (a partition range, as `h3 index-build`
    does): 500 PDFs dropped at once become ~32 runs, not 500 that each load the models.

    The partitions are added here rather than through the SensorResult because a range can only
    be formed over partitions that exist (adding them is idempotent)."""
    add_partitions(instance, list(mtimes))
    requests = []
    for batch in contiguous_batches(instance, list(mtimes), BATCH_SIZE):
        stamp = ",".join(f"{d}@{mtimes[d]}" for d in batch)
        requests.append(RunRequest(job_name=ingest_job.name, run_key=f"ingest:{stamp}",
                                   tags={**range_tags(batch, instance), "h3/trigger": "inbox"}))
    return requests


def _vanished(store, seen: dict[str, list], current: dict[str, list]) -> list[str]:
    """Documents whose inbox file is gone. A document that another inbox file still holds, or
    that was registered from another path (the same bytes ingested from elsewhere), stays."""
    still_held = {entry[2] for entry in current.values()}
    gone: list[str] = []
    for path, entry in seen.items():
        doc_id = entry[2]
        if path in current or not doc_id or doc_id in still_held or doc_id in gone:
            continue
        row = store.get_document(doc_id)
        if row is not None and row.get("source") not in (None, path):
            continue
        gone.append(doc_id)
    return gone


@sensor(jobs=[ingest_job, delete_documents], minimum_interval_seconds=30,
        default_status=DefaultSensorStatus.STOPPED,
        description="Ingests new or changed PDFs found in the inbox ($H3_INBOX, default "
                    "$H3_HOME/inbox) and deletes the documents whose PDF was removed.")
def inbox_sensor(context: SensorEvaluationContext) -> SensorResult | SkipReason:
    return scan_inbox(context, inbox_dir())
