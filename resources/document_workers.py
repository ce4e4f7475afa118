"""Per-document work on worker processes, one per core this process may use.

In one process, a run's stages go one after another, and those that are plain Python on one
core (spaCy's NER for the knowledge graph, PyMuPDF's table finder and figure crops) leave the
other cores idle: on 2 cores, ~45 s of a 150 s ingestion of 35 filings. Their per-document
work, a module-level function of picklable records, goes to worker processes instead, several
documents at once (largest first), each computed whole, so a document's result is the one a
single process gives. The workers are spawned (the parent holds onnxruntime, LanceDB and torch
threads, which a fork would copy mid-use) when a call brings enough work to pay for starting
them (~3 s: START_S) and serve every later call of this process. A process allowed one core (a
local dask worker of several: resources/models/cpu.py) or not allowed children (a daemonic one,
as dask's workers are) computes here.

A worker keeps the environment of the moment it was spawned: functions given here must take
everything that depends on the caller's settings (H3_HOME paths, config values) as arguments.
"""

from __future__ import annotations

import atexit
import logging
import multiprocessing
import threading
import time
from collections.abc import Callable, Hashable
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import Any

from h3.resources.models.cpu import cpu_threads

log = logging.getLogger(__name__)

START_S = 3.0  # what spawning the workers (Python, the imports, a model) costs, roughly

_POOL: ProcessPoolExecutor | None = None
_POOL_LOCK = threading.Lock()


@dataclass(frozen=True, slots=True)
class Outcome:
    """One document's result (or the exception it raised), with its wall and CPU seconds."""

    value: Any
    error: Exception | None
    seconds: float
    cpu_seconds: float


def map_documents(fn: Callable[..., Any], args_by_doc: dict[Hashable, tuple],
                  cost_s: dict[Hashable, float]) -> dict[Hashable, Pending]:
    """`fn(*args)` for each document -> its Pending outcome; never raises for one document.

    `cost_s`: the caller's estimate of each document's seconds on one core: their sum decides
    whether starting the workers pays, and the costliest documents go first. The outcomes
    arrive while the caller works on the first ones (writing them, say)."""
    workers = min(cpu_threads(), len(args_by_doc))
    # a daemonic process (a dask worker's) may not start processes of its own
    if workers < 2 or multiprocessing.current_process().daemon \
            or (_POOL is None and sum(cost_s.values()) < START_S):
        return {doc: Pending(fn, args, None) for doc, args in args_by_doc.items()}
    pool = _pool(cpu_threads())
    order = sorted(args_by_doc, key=lambda d: -cost_s.get(d, 0.0))
    try:
        futures = {d: pool.submit(_timed, fn, args_by_doc[d]) for d in order}
    except BrokenProcessPool as exc:
        _gone(exc)
        futures = {}
    return {doc: Pending(fn, args, futures.get(doc)) for doc, args in args_by_doc.items()}


class Pending:
    """A document's outcome: from its worker's future, or computed here (no future, or the
    workers stopped: out of memory, killed)."""

    def __init__(self, fn: Callable[..., Any], args: tuple, future: Future | None) -> None:
        self._fn, self._args, self._future = fn, args, future

    def result(self) -> Outcome:
        if self._future is not None:
            try:
                return self._future.result()
            except BrokenProcessPool as exc:
                _gone(exc)
        return _timed(self._fn, self._args)


def _gone(exc: BaseException) -> None:
    log.warning("document workers stopped (%s): computing in this process", exc)
    shutdown()


def _timed(fn: Callable[..., Any], args: tuple) -> Outcome:
    t0, cpu0 = time.perf_counter(), time.process_time()
    try:
        value, error = fn(*args), None
    except Exception as exc:  # noqa: BLE001 - returned: the caller fails this document only
        value, error = None, exc
    return Outcome(value, error, time.perf_counter() - t0, time.process_time() - cpu0)


def _pool(workers: int) -> ProcessPoolExecutor:
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            _POOL = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"))
        return _POOL


def shutdown(wait: bool = False) -> None:
    """Stops the workers (they start again on the next call that pays for them); `wait`: until
    they have exited (their CPU time then counts in this process's RUSAGE_CHILDREN)."""
    global _POOL
    with _POOL_LOCK:
        if _POOL is not None:
            _POOL.shutdown(wait=wait, cancel_futures=True)
            _POOL = None


atexit.register(shutdown)
