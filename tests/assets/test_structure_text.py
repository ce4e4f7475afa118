"""The structures stage reads captions and near text from the PDF itself (assets/structures.py):
on a PDF written here, with text a layout box swallowed and two captions on one baseline."""

from __future__ import annotations

from pathlib import Path

import pymupdf

from h3.assets.structures import page_text
from h3.resources.semantic.structures import structure_rows


def _pdf(path: Path) -> Path:
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    for x in (72, 330):
        shape = page.new_shape()
        shape.draw_rect(pymupdf.Rect(x, 100, x + 200, 300))
        shape.finish(fill=(0.4, 0.4, 0.4))
        shape.commit()
    # two captions on one baseline (PyMuPDF reads them as one block of two lines)
    page.insert_text((72, 315), "Figure 1. Pressure gauge", fontsize=9)
    page.insert_text((330, 315), "Figure 2. Flow meter", fontsize=9)
    page.insert_text((72, 770), "Contact: Tel. 555-0100", fontsize=8)
    doc.save(path)
    return path


def test_captions_and_footer_text_come_from_the_pdf(tmp_path):
    pdf = _pdf(tmp_path / "gauges.pdf")
    blocks, lines, heights = page_text(str(pdf), {1})
    assert heights == {1: 792.0} and any("Tel. 555-0100" in t for _, t in blocks[1])
    regions = [{"doc_id": "d", "region_id": f"d:p1:r{i}", "page": 1, "kind": "figure",
                "bbox": box, "text": "", "order": i, "extra_json": None}
               for i, box in enumerate(([72, 100, 272, 300], [330, 100, 530, 300],
                                        [560, 760, 590, 780]))]
    rows = structure_rows(regions, blocks, heights, lines)
    assert rows[0]["caption"] == "Figure 1. Pressure gauge" and rows[0]["number"] == "1"
    assert rows[1]["caption"] == "Figure 2. Flow meter" and rows[1]["number"] == "2"
    assert "Tel. 555-0100" in rows[2]["context"]  # a footer logo is known by the footer


def test_an_unreadable_source_falls_back_to_the_regions(tmp_path):
    assert page_text(str(tmp_path / "gone.pdf"), {1}) == ({}, {}, {})
    (tmp_path / "bad.pdf").write_bytes(b"not a pdf")
    assert page_text(str(tmp_path / "bad.pdf"), {1}) == ({}, {}, {})
