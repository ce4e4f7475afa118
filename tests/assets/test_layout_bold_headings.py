"""A heading set bold and a little larger than the body (a word processor's Heading style) is
typed `title` where the layout model does not see it; bold column heads side by side and bold
text at the body's own size are not."""

from __future__ import annotations

import pymupdf

from h3.assets.layout import _alone_on_its_line, page_layout

BODY = ("Word processors replaced the typewriter in offices over two decades, and the way "
        "people drafted, corrected and shared their writing changed with them.")


def _page(heading_size: float) -> pymupdf.Page:
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((72, 100), "The Rise of Personal Computers", fontname="hebo",
                     fontsize=heading_size)
    page.insert_textbox(pymupdf.Rect(72, 115, 520, 200), BODY * 2, fontname="helv", fontsize=12)
    # bold column heads on one line, as a statement's grid sets them: PyMuPDF joins the first
    # two into one block, spaced like a row; the third is a block of its own beside them
    page.insert_text((250, 260), "Accumulated", fontname="hebo", fontsize=13.4)
    page.insert_text((380, 260), "Retained", fontname="hebo", fontsize=13.4)
    page.insert_text((250, 240), "Paid-In", fontname="hebo", fontsize=13.4)
    page.insert_text((480, 240), "Capital", fontname="hebo", fontsize=13.4)
    page.insert_textbox(pymupdf.Rect(72, 280, 520, 360), BODY * 2, fontname="helv", fontsize=12)
    return page


def _kinds(page: pymupdf.Page) -> dict[str, str]:
    return {" ".join(b.text.split()): b.type for b in page_layout(page, None, 72).blocks}


def test_a_bold_heading_slightly_larger_than_the_body_is_a_title():
    kinds = _kinds(_page(13.4))
    assert kinds["The Rise of Personal Computers"] == "title"
    heads = {t: k for t, k in kinds.items() if "Accumulated" in t or "Capital" in t}
    assert heads and all(k == "text" for k in heads.values()), heads
    assert all(k == "text" for t, k in kinds.items() if t.startswith("Word processors"))


def test_bold_at_the_body_size_is_left_to_the_layout_model():
    assert _kinds(_page(12))["The Rise of Personal Computers"] == "text"


def test_a_block_with_another_beside_it_is_not_alone_on_its_line():
    head, beside, below = (72, 100, 200, 114), (300, 101, 380, 115), (72, 130, 500, 190)
    assert _alone_on_its_line(head, [head, below])
    assert not _alone_on_its_line(head, [head, beside, below])
