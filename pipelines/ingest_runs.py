"""One ingestion run per batch of documents, and the retry that isolates a crash's culprit:
used by `h3 index-build` in this process and by the dask orchestrators (pipelines/scaleout.py),
so neither imports the other."""

from __future__ import annotations

from pathlib import Path

from h3.pipelines.cli.output import log

# Dagster's console logger at DEBUG prints every event, and at WARNING each failed document's
# reason (which the report prints once); the runs' full logs stay in the instance.
QUIET = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}
# The step that fails a run in which some document did not ingest (assets/ingested.py).
GATE_STEP = "ingested_documents"


def execute_batch(job, instance, batch: list[str], files_of: dict[str, str],
                  run_config: dict | None = None) -> list[str]:
    """Runs one batch; a run that crashed (not a bad document) is retried one run per document,
    so that the culprit is isolated. Returns the run ids."""
    result = _execute(job, instance, batch, files_of, run_config)
    run_ids = [result.run_id]
    if not result.success and _crashed(result) and len(batch) > 1:
        log(f"index-build: run {result.run_id} failed; retrying its {len(batch)} documents "
            "one run each")
        run_ids += [_execute(job, instance, [d], files_of, run_config).run_id for d in batch]
    return run_ids


def _execute(job, instance, batch: list[str], files_of: dict[str, str],
             run_config: dict | None = None):
    """One run over a partition range: in this process, or (a reconstructable job and its
    executor's run config) through `execute_job`, which hands the steps to that executor."""
    from h3.assets._batch import file_names
    from h3.pipelines.partitions import range_tags

    tags = {**range_tags(batch, instance),
            "h3/files": file_names([files_of.get(d) for d in batch])}
    if len(batch) == 1 and files_of.get(batch[0]):  # the run page names its file from the start
        tags["h3/file"] = Path(files_of[batch[0]]).name
    if run_config is None:
        return job.execute_in_process(run_config=QUIET, instance=instance, tags=tags,
                                      raise_on_error=False)
    from dagster import execute_job

    with execute_job(job, instance, run_config={**QUIET, **run_config}, tags=tags,
                     raise_on_error=False) as result:
        return result


def _crashed(result) -> bool:
    """Whether a failed run failed for another reason than documents that did not ingest (the
    gate step fails the run then, after every other step succeeded)."""
    failed_steps = {ev.step_key for ev in result.get_step_failure_events()}
    return failed_steps != {GATE_STEP}
