"""The PP-PicoDet layout detector (real model) on a rendered sample page."""

from __future__ import annotations

import numpy as np
import pymupdf

from h3.resources.models.layout import LayoutDetector
from tests.conftest import SAMPLE_CORPUS


def test_detector_finds_the_table_and_figure_and_its_threads_do_not_spin():
    detector = LayoutDetector()
    session = detector.model.session.session
    entry = session.get_session_options().get_session_config_entry(
        "session.intra_op.allow_spinning")
    assert entry == "0"
    with pymupdf.open(SAMPLE_CORPUS / "annual_report.pdf") as pdf:
        pix = pdf[1].get_pixmap(dpi=72)  # page 2: a chart and a ruled table
    image = np.frombuffer(pix.samples, dtype=np.uint8).reshape(pix.h, pix.w, pix.n)  # (H, W, C)
    kinds = {d.kind for d in detector.detect(np.ascontiguousarray(image[:, :, 2::-1]))}
    assert {"table", "figure"} <= kinds
    assert LayoutDetector().model is detector.model  # one session per process


def test_pages_read_on_worker_threads_give_the_layouts_of_one_page_at_a_time():
    """`detected_pages` (the layout stage: single-threaded model runs on 2 worker threads, pages
    rendered ahead) must type every block exactly as the model run page by page on 2 intra-op
    threads did, in page order, and leave the pages the model skips to the font rules."""
    from h3.assets.layout import detected_pages, page_layout
    from h3.resources.models.layout import LayoutModelResource

    resource = LayoutModelResource()
    skip_second = lambda page: page.number != 1  # noqa: E731  (a page the model does not see)
    with pymupdf.open(SAMPLE_CORPUS / "annual_report.pdf") as pdf:
        one_by_one = [page_layout(p, LayoutDetector(threads=2) if skip_second(p) else None, 72)
                      for p in pdf]
        pooled = [page_layout(p, None, 72, detected=found) for p, found in detected_pages(
            pdf, resource.get_detector(), skip_second, 72, workers=2)]
    assert [p.page for p in pooled] == list(range(1, len(one_by_one) + 1))
    assert pooled == one_by_one
    assert [p.model for p in pooled] == [i != 1 for i in range(len(pooled))]
    assert any(p.detections for p in pooled)
