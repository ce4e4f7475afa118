"""tesseract as the OCR stage and the cover profile call it (resources/models/tesseract.py): one
thread, real tesseract."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pymupdf
import pytest

from h3.resources.models.ocr import TesseractOcr
from h3.resources.models.tesseract import tesseract_output

SCAN = Path(__file__).resolve().parents[1] / "fixtures" / "sample_corpus" / "field_notes_scan.pdf"


def _page_image(dpi: int = 200) -> np.ndarray:
    with pymupdf.open(SCAN) as pdf:
        pix = pdf[0].get_pixmap(dpi=dpi, colorspace=pymupdf.csRGB, alpha=False)
    return np.frombuffer(pix.samples, np.uint8).reshape(pix.h, pix.w, 3)


def test_a_scanned_page_reads_as_tsv_words_with_confidences():
    tsv = tesseract_output(_page_image(), "eng", "tsv")
    header, *rows = [line.split("\t") for line in tsv.strip().splitlines()]
    assert header[:2] == ["level", "page_num"] and header[-1] == "text"
    words = [r[-1] for r in rows if r[0] == "5" and float(r[-2]) > 60 and r[-1].strip()]
    assert len(words) > 20
    text = tesseract_output(_page_image(), "eng")  # plain text, as the cover's profile reads it
    assert sum(w in text for w in words) >= 0.8 * len(words)
    layout = TesseractOcr("eng").read(_page_image())
    assert len(layout) >= 1 and all(block.text for block in layout)


def test_a_tesseract_failure_is_an_error_naming_it():
    with pytest.raises(RuntimeError, match="tesseract failed"):
        tesseract_output(_page_image(72), "no_such_language")


def test_languages_without_tesseract_data_are_refused_naming_the_key_and_the_package():
    from h3.resources.models.tesseract import installed_languages

    assert {"eng", "chi_sim"} <= installed_languages()  # what the Makefile installs
    with pytest.raises(ValueError) as err:
        TesseractOcr("eng+xyz")
    message = str(err.value)
    assert "cold_storage.ocr_languages" in message and "xyz" in message
    assert "apt install tesseract-ocr-xyz" in message and "eng" in message.split("installed")[1]


def test_auto_without_chinese_data_keeps_the_english_reading_and_says_so(monkeypatch):
    """'auto' retries a low-confidence page in Chinese; on a machine without Chinese data the
    retry would fail and lose the page: the English reading stays, with a note."""
    from h3.resources.models import ocr, tesseract

    monkeypatch.setattr(tesseract, "installed_languages", lambda: frozenset({"eng", "osd"}))
    engine = TesseractOcr("auto")
    assert engine.fallback is None and "chi_sim" in engine.note
    monkeypatch.setattr(ocr, "AUTO_RETRY_CONFIDENCE", 101.0)  # every page would be retried
    layout = engine.read(_page_image())
    assert len(layout) >= 1 and engine.last_languages == "eng"
    monkeypatch.undo()
    assert TesseractOcr("auto").fallback == "chi_sim+eng" and TesseractOcr("auto").note is None
