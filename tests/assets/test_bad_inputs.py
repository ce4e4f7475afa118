"""Each kind of bad PDF is refused with a reason naming the file and the cause."""

from __future__ import annotations

import pytest

from assets._batch import DocumentError
from assets.documents import inspect_pdf
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
    assert info["pages"] == 2 and info["text_pages"] == [True, False]
    assert len(info["content_hash"]) == 64
