"""The long_document bench's two PDFs: 500 pages led by the question's own filing, and 20 pages
of that filing around its evidence page."""

from __future__ import annotations

import json

import pymupdf

from benchmarks.documents.long_document import LONG_PAGES, SHORT_PAGES, _question, build_pdfs


def _filing(path, name: str, pages: int) -> None:
    doc = pymupdf.open()
    for n in range(1, pages + 1):
        doc.new_page().insert_text((72, 72), f"{name} page {n}")
    doc.save(path)


def test_the_long_pdf_leads_with_the_question_filing_and_the_short_one_holds_its_evidence(tmp_path):
    corpus = tmp_path / "corpus"
    (corpus / "pdfs").mkdir(parents=True)
    _filing(corpus / "pdfs" / "A.pdf", "alpha", 150)
    _filing(corpus / "pdfs" / "B.pdf", "beta", 300)
    _filing(corpus / "pdfs" / "C.pdf", "gamma", 300)
    questions = [{"file": "B.pdf", "question": "q two pages", "pages": [5, 6]},
                 {"file": "B.pdf", "question": "q", "pages": [290]}]
    (corpus / "questions.jsonl").write_text("".join(json.dumps(q) + "\n" for q in questions))
    question = _question(corpus)
    assert question["pages"] == [290]  # one evidence page
    pdfs = build_pdfs(corpus, question, tmp_path / "out")
    with pymupdf.open(pdfs["long"]) as long_doc:
        assert long_doc.page_count == pdfs["long_pages"] == LONG_PAGES
        assert "beta page 1" in long_doc[0].get_text()
        assert "alpha page 1" in long_doc[300].get_text()  # then the others, in name order
        assert "gamma page 50" in long_doc[LONG_PAGES - 1].get_text()
    with pymupdf.open(pdfs["short"]) as short_doc:
        assert short_doc.page_count == SHORT_PAGES
        first = pdfs["short_first_page"]
        assert f"beta page {first}" in short_doc[0].get_text()
        assert "beta page 290" in short_doc[290 - first].get_text()
