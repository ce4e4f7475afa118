"""`h3 index-build` on a folder of odd files through Dagster: a textless document does not break
corpus compression, an unreadable text layer is OCR'd instead of chunked as garbage, a rotated
scan is recalled with a box on its page, bad files and a dangling symlink fail alone with a
reason, and a re-run with the same bad files changes nothing (no compression either)."""

from __future__ import annotations

import json
import os

import pymupdf
import pytest

from tests.assets.test_odd_pdfs import garbled_pdf, scan_pdf

REPORT = ("The quarterly report of the harbour authority describes cargo volumes, berth "
          "occupancy and the maintenance of the cranes at the southern terminal. ")


def odd_corpus(folder):
    folder.mkdir()
    doc = pymupdf.open()
    for i in range(8):  # enough chunks for compress_corpus to run
        doc.new_page().insert_textbox(pymupdf.Rect(36, 36, 559, 806),
                                      f"Section {i + 1}.\n" + REPORT * 14, fontsize=10)
    doc.save(folder / "report.pdf")
    garbled_pdf(folder / "garbled text.pdf", table=True)
    scan_pdf(folder / "scan_rot90.pdf", 90)
    doc = pymupdf.open()
    page = doc.new_page()
    for i in range(12):
        page.draw_rect(pymupdf.Rect(50 + 10 * i, 50 + 10 * i, 300, 300), color=(0, 0, 1))
    doc.save(folder / "drawing.pdf")
    (folder / "fake.pdf").write_text("a text file named .pdf")
    os.symlink(folder / "moved-away.pdf", folder / "link.pdf")


@pytest.mark.slow
def test_odd_corpus_ingests_each_file_on_its_own_merits(h3_home, tmp_path, capsys):
    from h3.assets.doc_index import textless_doc_ids
    from h3.pipelines.cli.index_build import ingest
    from h3.pipelines.cli.main import main
    from h3.resources.recall import recall
    from h3.resources.store import open_store

    corpus = tmp_path / "odd"
    odd_corpus(corpus)
    assert main(["index-build", "--path", str(corpus), "--json", "--compress"]) == 1  # two bad files
    report = json.loads(capsys.readouterr().out)
    docs = {d["source"].rsplit("/", 1)[-1]: d for d in report["documents"]}
    assert {n: d["status"] for n, d in docs.items()} == {
        "report.pdf": "ok", "garbled text.pdf": "ok", "scan_rot90.pdf": "ok",
        "drawing.pdf": "ok", "fake.pdf": "failed", "link.pdf": "failed"}
    assert "not a PDF" in docs["fake.pdf"]["reason"]
    assert "link.pdf: cannot read" in docs["link.pdf"]["reason"]
    assert any("unreadable text layer" in w for w in docs["garbled text.pdf"]["warnings"])
    assert any("no text found" in w for w in docs["drawing.pdf"]["warnings"])
    assert docs["report.pdf"]["warnings"] == []
    # the textless drawing is stored ok without chunks, on purpose: compression's check that no
    # ok document lost its chunks knows it (compression's own quality checks may still fail on
    # so small and odd a corpus: they are not what this test is about)
    assert report["compress"]["status"] in ("ok", "failed")
    assert "every_document_has_chunks" not in str(report["compress"]["reason"])
    store = open_store()
    assert textless_doc_ids(store) == {docs["drawing.pdf"]["doc_id"]}
    for table in ("regions", "chunks", "structures"):  # no glyph garbage stored anywhere
        rows = store.rows(table, None, ["text"])
        assert not any(0xE000 <= ord(c) <= 0xF8FF for r in rows for c in r["text"]), table
    hits = {r["query"]: r["hits"] for r in recall(store, [
        "cranes repaired in March by the northern terminal crew", "SCANNED INVOICE"], k=5)}
    garbled = [h for h in hits["cranes repaired in March by the northern terminal crew"]
               if h["source"].endswith("garbled text.pdf")]
    assert garbled and garbled[0]["kind"] == "ocr_text" and garbled[0]["page"] == 1
    scan = next(h for h in hits["SCANNED INVOICE"] if h["source"].endswith("scan_rot90.pdf"))
    assert scan["kind"] == "ocr_text" and scan["page"] == 1
    x0, y0, x1, y1 = scan["bbox"]  # unrotated page: 842 x 595 points
    assert 0 <= x0 < x1 <= 842 and 0 <= y0 < y1 <= 595

    counts = store.counts()
    again = ingest([str(corpus)], compress=True)
    assert (again["ok"], again["unchanged"], again["failed"]) == (0, 4, 2)
    assert again["compress"] == {"status": "skipped", "reason": "no document changed",
                                 "run_id": None}
    assert store.counts() == counts
