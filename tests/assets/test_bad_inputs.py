"""Each kind of bad PDF is refused with a reason naming the file and the cause."""

from __future__ import annotations

import pytest

from h3.assets._batch import DocumentError
from h3.assets.documents import inspect_pdf
from tests.conftest import SAMPLE_CORPUS
from tests.fixtures.make_sample_corpus import write_bad_inputs

EXPECTED = {"empty": "empty file", "not_a_pdf": "not a PDF", "truncated": "truncated",
            "encrypted": "encrypted, no password given"}


@pytest.mark.parametrize("kind", sorted(EXPECTED))
def test_bad_input_is_refused_with_reason(tmp_path, kind):
    bad = write_bad_inputs(tmp_path, SAMPLE_CORPUS / "lab_handbook.pdf")[kind]
    with pytest.raises(DocumentError) as err:
        inspect_pdf(bad)
    assert str(bad) in str(err.value) and EXPECTED[kind] in str(err.value)


def test_good_pdf_is_described():
    info = inspect_pdf(SAMPLE_CORPUS / "field_notes_scan.pdf")
    assert info.pages == 2 and info.text_pages == (True, False)
    assert len(info.content_hash) == 64


def test_a_file_cut_inside_its_cross_reference_table_is_read_with_a_warning(tmp_path):
    """A download a few bytes short (no %%EOF, the objects whole): every page is read."""
    import pymupdf

    from h3.assets.documents import cut_in_xref_table

    source = SAMPLE_CORPUS / "lab_handbook.pdf"
    whole = tmp_path / "whole.pdf"
    with pymupdf.open(source) as doc:
        pages = doc.page_count
        doc.save(whole, use_objstms=False)  # a classic xref table, as many filings have
    data = whole.read_bytes()
    cut = tmp_path / "short_download.pdf"
    cut.write_bytes(data[:data.rfind(b"\nxref") + 40])  # inside the table's entries
    assert cut_in_xref_table(cut.read_bytes())
    info = inspect_pdf(cut)
    assert info.pages == pages
    assert any("cross-reference table" in w for w in info.warnings)
    half = tmp_path / "half.pdf"
    half.write_bytes(data[: len(data) // 2])  # cut inside the content: still refused
    with pytest.raises(DocumentError, match="truncated"):
        inspect_pdf(half)
