"""The PP-PicoDet layout detector (real model) on a rendered sample page."""

from __future__ import annotations

import numpy as np
import pymupdf

from resources.models.layout import LayoutDetector
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
