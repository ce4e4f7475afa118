"""The layout model's reading of a PDF's pages: each page rendered and the model's boxes, in PDF
points (the `layout` stage, and the background reader of assets/_layout_ahead.py)."""

from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np
import pymupdf

from h3.assets._page_space import capped_dpi, from_pixels
from h3.resources.models.layout import Detection, LayoutDetector

LAYOUT_MAX_PIXELS = 16_000_000  # the model sees ~800 px anyway; a huge page is rendered smaller


def page_image(page: pymupdf.Page, dpi: int) -> tuple[np.ndarray, int]:
    """The page rendered for the layout model: (H, W, 3) BGR uint8, and the dpi used (lowered
    for huge pages)."""
    dpi = capped_dpi(page, dpi, LAYOUT_MAX_PIXELS)
    pix = page.get_pixmap(dpi=dpi)
    image = np.frombuffer(pix.samples, dtype=np.uint8).reshape(pix.h, pix.w, pix.n)  # (H, W, C)
    return np.ascontiguousarray(image[:, :, 2::-1]), dpi  # (H, W, 3) BGR


def detected_pages(pages: Iterable[pymupdf.Page], detector: LayoutDetector | None,
                   wants: Callable[[pymupdf.Page], bool], dpi: int, workers: int,
                   known: dict[int, list[Detection] | None] | None = None
                   ) -> Iterator[tuple[pymupdf.Page, list[Detection] | None]]:
    """(page, the model's boxes in PDF points, or None where it did not look), in page order.
    `pages`: a PDF (every page) or some of its pages; `known`: boxes found already, by 0-based
    page number (assets/_layout_ahead.py), taken as they are.

    Pages are rendered here and read by the model on `workers` threads, at most 2 * workers
    page images in flight: PyMuPDF is not thread-safe, so it stays on this thread, while
    onnxruntime releases the GIL. Several single-threaded runs at once beat one run on several
    threads: each op of a 2-thread run waits at a barrier for both threads, and on a busy
    machine one of them is often descheduled (24 pages of a 10-K, same process: 4.3-4.5 s wall
    for 2 workers x 1 thread vs 5.6-6.0 s for 1 x 2 threads, the same boxes)."""
    known = known or {}
    if detector is None:
        for page in pages:
            yield page, None
        return

    def done(page: pymupdf.Page, job: tuple[Future, int] | None) -> tuple:
        if page.number in known:
            return page, known[page.number]
        if job is None:
            return page, None
        found, used = job[0].result(), job[1]
        return page, [Detection(d.kind, d.score, tuple(from_pixels(page, d.bbox, used)))
                      for d in found]

    with ThreadPoolExecutor(max(1, workers), thread_name_prefix="layout") as pool:
        pending: deque = deque()
        for page in pages:
            job = None
            if page.number not in known and wants(page):
                image, used = page_image(page, dpi)
                job = (pool.submit(detector.detect, image), used)
            pending.append((page, job))
            while len(pending) > 2 * max(1, workers):
                yield done(*pending.popleft())
        while pending:
            yield done(*pending.popleft())
