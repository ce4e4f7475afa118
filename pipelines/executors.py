"""Where `h3 index-build`'s steps run (kept free of heavy imports: the CLI parses with it).

- "in_process" (the default): one batch run after another in the calling process, while a
  background process reads the later batches' pages with the layout model
  (assets/_layout_ahead.py). Layout and embeddings use every core through their own threads;
  the per-document stages that are plain Python on one core (knowledge graph, tables,
  figures, OCR) spread their documents over worker processes (resources/document_workers.py).
- "dask": concurrent batch runs whose steps execute on a dask cluster (pipelines/scaleout.py):
  the one at $H3_DASK_SCHEDULER, or a LocalCluster of `--workers` single-thread processes. On
  one 2-core machine it is no faster than in process (the 35 unlabelled development filings:
  152 s on 2 local workers, 154 s in process before the document workers, 139 s after): it is
  for more machines.
"""

from __future__ import annotations

import os

EXECUTORS = ("in_process", "dask")
EXECUTOR_ENV = "H3_EXECUTOR"             # default of `h3 index-build --executor`
SCHEDULER_ENV = "H3_DASK_SCHEDULER"      # default of `--dask-scheduler` (tcp://host:8786)


class ScaleOutError(RuntimeError):
    """The cluster cannot be used (unreachable, no workers, a bad setting); one line, naming it."""


def executor_default() -> str:
    """$H3_EXECUTOR, else "in_process"."""
    value = os.environ.get(EXECUTOR_ENV) or "in_process"
    if value not in EXECUTORS:
        raise ScaleOutError(f"{EXECUTOR_ENV}={value!r}: expected one of {', '.join(EXECUTORS)}")
    return value
