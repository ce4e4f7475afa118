"""The layout model's boxes for documents a later run will ingest, found while this run works.

`h3 index-build` runs one Dagster run per batch of documents, its stages one after another.
Layout and embeddings keep both cores busy; the stages between them (the knowledge graph's
hand-over, tables, figures, OCR, chunks, the store) often leave one idle: on the 35 unlabelled
development filings both cores were busy 0.68 of the run. Reading the pages with the layout
model (rendering + PP-PicoDet) is ~97% of the layout stage's CPU and depends only on the PDF and
the model's settings, so the CLI hands the documents of its later batches to one background
process at the lowest CPU priority (SCHED_IDLE): it takes the time the running stages leave idle
and yields the core whenever they want it. When a later run's layout stage reaches a document,
it takes the boxes found for its pages (the same function of the same pages: the same layout)
and reads the other pages itself.

Only `h3 index-build`'s in-process runs use it (`layout_ahead()` around its batches); a run from
the UI or on dask workers finds nothing here and reads every page in its layout stage.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import time
from collections.abc import Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pymupdf

from h3.assets._page_boxes import detected_pages
from h3.resources.models.cpu import cpu_threads
from h3.resources.models.layout import Detection, LayoutModelResource

log = logging.getLogger(__name__)

PAGES_PER_TASK = 8  # a task's pages: ~1-2 s on one core, what a stage may wait for at most twice

# 0-based page -> the model's boxes (PDF points), None where it does not look at the page
# (layout_model.pages); a page read by nobody yet is absent
PageBoxes = dict[int, list[Detection] | None]


@dataclass(frozen=True, slots=True)
class Reading:
    """What decides the model's boxes for a PDF: its bytes (path, size, mtime) and the settings."""

    path: str
    size: int
    mtime_ns: int
    conf_thresh: float
    threads: int
    dpi: int
    pages: str

    @classmethod
    def of(cls, path: str, model: LayoutModelResource) -> Reading | None:
        """None where the file cannot be read now (the run's own stage then says why)."""
        try:
            stat = os.stat(path)
        except OSError:
            return None
        return cls(str(path), stat.st_size, stat.st_mtime_ns, model.conf_thresh, model.threads,
                   model.dpi, model.pages)


def read_boxes(reading: Reading, first: int, stop: int) -> tuple[PageBoxes, float]:
    """The layout stage's own reading of pages `first` .. `stop` - 1 (0-based) of the PDF, one
    page at a time (a background process's share); returns the boxes and the CPU seconds."""
    cpu0 = time.process_time()
    model = LayoutModelResource(conf_thresh=reading.conf_thresh, threads=reading.threads,
                                dpi=reading.dpi, pages=reading.pages)
    with pymupdf.open(reading.path) as pdf:
        found = {page.number: boxes for page, boxes in detected_pages(
            pdf.pages(first, min(stop, pdf.page_count)), model.get_detector(), model.wants,
            model.dpi, workers=1)}
    return found, time.process_time() - cpu0


def _lowest_priority() -> None:
    """The reader runs only on a core nothing else wants: SCHED_IDLE where Linux offers it
    (below even nice 19, which still takes ~1.5% of a busy core from each running thread),
    else nice 19. Threads it starts later inherit it."""
    try:
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
    except (AttributeError, OSError):
        os.nice(19)


class LayoutAhead:
    """One background process reading the pages of the documents handed to it, in order, a few
    pages a task: a stage that reaches a document waits at most for the task or two under way
    (a 10-K read whole on one core would keep it waiting longer than reading it itself)."""

    def __init__(self) -> None:
        self._pool: ProcessPoolExecutor | None = None
        self._pending: dict[str, tuple[Reading, list[Future]]] = {}

    def submit(self, sources: dict[str, str], model: LayoutModelResource) -> None:
        """Reads the pages of each document (doc_id -> PDF path), in the given order."""
        if not model.enabled:
            return
        if self._pool is None:
            self._pool = ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"),
                                             initializer=_lowest_priority)
        for doc_id, path in sources.items():
            reading = Reading.of(path, model)
            if reading is None or doc_id in self._pending:
                continue
            try:
                with pymupdf.open(path) as pdf:
                    count = pdf.page_count
            except Exception:  # noqa: BLE001, S112 - not a PDF here: the stages say why
                continue
            self._pending[doc_id] = (reading, [
                self._pool.submit(read_boxes, reading, first, first + PAGES_PER_TASK)
                for first in range(0, count, PAGES_PER_TASK)])

    def take(self, doc_id: str, path: str, model: LayoutModelResource
             ) -> tuple[PageBoxes, float] | None:
        """The boxes found for the document's pages (those read, waiting for the tasks under
        way) and their CPU seconds. Tasks not started are dropped: the stage reads those pages
        faster itself, on every core; so are the boxes of a file or settings that changed
        since, and tasks that failed (the stage reads those pages and says what is wrong).
        None where nothing was found."""
        reading, futures = self._pending.pop(doc_id, (None, []))
        if not futures or reading != Reading.of(path, model):
            for future in futures:
                future.cancel()
            return None
        found: PageBoxes = {}
        cpu = 0.0
        for future in futures:
            if future.cancel():
                continue
            try:
                boxes, seconds = future.result()
            except Exception as exc:  # noqa: BLE001 - the stage reads those pages itself
                log.info("layout ahead: %s: %r; the layout stage reads those pages", path, exc)
                continue
            found.update(boxes)
            cpu += seconds
        return (found, cpu) if found else None

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None
        self._pending.clear()


_CURRENT: LayoutAhead | None = None


@contextmanager
def layout_ahead() -> Iterator[LayoutAhead | None]:
    """Meanwhile, layout stages in this process take what the yielded reader found (None on a
    single core, where a background reader would only take the core from the run)."""
    global _CURRENT
    if cpu_threads() < 2 or _CURRENT is not None:
        yield None
        return
    _CURRENT = LayoutAhead()
    try:
        yield _CURRENT
    finally:
        _CURRENT.close()
        _CURRENT = None


def boxes_found_ahead(doc_id: str, path: str | Path, model: LayoutModelResource
                      ) -> tuple[PageBoxes, float] | None:
    """For the layout stage: the boxes read ahead for this document, if any (`LayoutAhead.take`)."""
    return _CURRENT.take(doc_id, str(path), model) if _CURRENT is not None else None
