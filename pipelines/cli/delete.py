"""`h3 delete DOC_ID|PATH [...] [--json]`: removes documents and everything derived from them,
with the inbox sensor's deletion (pipelines/deletion.py), run as a Dagster run (it shows in the
UI like the sensor's)."""

from __future__ import annotations

import argparse
from pathlib import Path

from h3.ontology.ids import doc_id_of_partition
from h3.pipelines.cli.output import CliError, emit


def add_parser(sub: argparse._SubParsersAction) -> None:
    d = sub.add_parser("delete", help="remove documents and everything derived from them")
    d.add_argument("targets", nargs="+", metavar="DOC_ID|PATH",
                   help="a document id (see `h3 list`), a PDF path, a folder (every document "
                        "registered under it), or a file name one stored file has")
    d.add_argument("--json", action="store_true", help="machine-readable output on stdout")


def resolve_targets(rows: list[dict], targets: list[str]) -> tuple[list[str], list[str]]:
    """(doc_ids to delete, targets that match no document) among the store's documents rows
    (doc_id, source). A target is a doc_id, a partition key as the UI shows it
    (`report.pdf-<doc_id>`), a file path (every version registered for it), a folder (every
    document registered under it) or a bare file name that one stored file has."""
    ids: list[str] = []
    unknown: list[str] = []
    for target in targets:
        doc_id = _partition_doc_id(target)
        if doc_id and any(r["doc_id"] == doc_id for r in rows):
            found = [doc_id]
        else:
            path = str(Path(target).resolve())
            found = [r["doc_id"] for r in rows if r.get("source") == path
                     or (r.get("source") or "").startswith(path.rstrip("/") + "/")]
            if not found and Path(target).name == target:  # a bare file name, as `h3 list` and
                # `h3 ask --doc` show it: only where one stored file has it (deleting is final)
                named = {r.get("source") for r in rows
                         if Path(r.get("source") or "").name == target}
                if len(named) > 1:
                    unknown.append(f"{target} (the name of {len(named)} stored files: give the "
                                   "path or the doc id)")
                    continue
                found = [r["doc_id"] for r in rows if r.get("source") in named]
        if not found:
            unknown.append(target)
        ids += [d for d in found if d not in ids]
    return ids, unknown


def run(args: argparse.Namespace) -> int:
    from h3.resources.store import open_store

    store = open_store()
    rows = store.rows("documents", columns=["doc_id", "source"])
    ids, unknown = resolve_targets(rows, args.targets)
    if unknown:  # nothing is deleted when one target is wrong: a typo must not half-run
        raise CliError(f"no document with this id or path: {', '.join(unknown)} "
                       "(see `h3 list`)")
    sources = {r["doc_id"]: r["source"] for r in rows}
    run_id = delete(ids)
    report = {"deleted": [{"doc_id": i, "source": sources.get(i)} for i in ids],
              "run_id": run_id}
    emit(report, args.json, human="\n".join(
        [f"deleted  {i}  {sources.get(i)}" for i in ids] + [f"Dagster run: {run_id}"]))
    return 0


def delete(doc_ids: list[str]) -> str:
    """Runs the inbox sensor's `delete_documents` job on these documents in this H3_HOME's
    Dagster instance (so the deletion shows in the UI); returns the run id. Raises CliError if
    the run fails."""
    from h3.pipelines.cli.index_build import QUIET, stdout_to_stderr
    from h3.pipelines.definitions import defs
    from h3.pipelines.deletion import delete_documents
    from h3.pipelines.instance import get_instance

    config = {**QUIET, "ops": {"delete_documents_op": {"config": {
        "doc_ids": doc_ids, "reason": "h3 delete"}}}}
    with stdout_to_stderr():
        result = defs.resolve_job_def(delete_documents.name).execute_in_process(
            run_config=config, instance=get_instance(), raise_on_error=False,
            tags={"h3/files": ", ".join(doc_ids)[:200]})
    if not result.success:
        failures = [ev.message for ev in result.all_events if ev.is_failure]
        raise CliError(f"deletion run {result.run_id} failed: "
                       f"{(failures[0] if failures else 'run failed')[:300]}")
    return result.run_id


def _partition_doc_id(target: str) -> str | None:
    """The doc_id a target names as an id or a partition key, else None (then it is a path)."""
    try:
        return doc_id_of_partition(target)
    except ValueError:
        return None
