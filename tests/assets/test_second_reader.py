"""A PDF whose catalog points at a page tree that is not there: MuPDF's repair opens it with no
page, pdfminer finds the pages by scanning the objects. The document is read with the second
reader (text layer), with a warning naming it, instead of failing."""

from __future__ import annotations

import re
from pathlib import Path

import pymupdf
import pytest

from h3.assets._batch import DocumentError
from h3.assets.documents import inspect_pdf


def broken_catalog_pdf(path: Path, pages: int = 3) -> Path:
    doc = pymupdf.open()
    for i in range(pages):
        doc.new_page().insert_text((72, 72), f"Page {i + 1}: freight volume rose {i + 5} percent.")
    data = doc.tobytes(deflate=False)
    ref = re.search(rb"/Pages (\d+) 0 R", data).group(0)
    path.write_bytes(data.replace(ref, b"/Pages 999 0 R", 1))  # the catalog's page tree: gone
    return path


def test_mupdf_reads_no_page_and_the_second_reader_reads_the_text(h3_home, tmp_path):
    path = broken_catalog_pdf(tmp_path / "damaged.pdf")
    with pymupdf.open(path) as doc:
        assert doc.page_count == 0  # the premise: MuPDF alone would fail this file
    described = inspect_pdf(path)
    assert described.pages == 3 and described.text_pages == (True,) * 3
    assert any("read with pdfminer" in w and str(path) in w for w in described.warnings)
    rebuilt = Path(described.source)
    assert rebuilt.is_relative_to(h3_home)
    with pymupdf.open(rebuilt) as doc:
        assert "freight volume rose 6 percent" in doc[1].get_text()


def test_a_file_no_reader_can_read_still_fails_with_the_reason(h3_home, tmp_path):
    path = tmp_path / "hollow.pdf"
    path.write_bytes(b"%PDF-1.7\n1 0 obj\n<< /Type /Catalog /Pages 9 0 R >>\nendobj\n"
                     b"trailer\n<< /Root 1 0 R >>\n%%EOF\n")
    with pytest.raises(DocumentError, match="no pages|cannot be opened"):
        inspect_pdf(path)
