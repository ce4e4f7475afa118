"""A displayed formula is typed `formula` from the fonts it is set in, where the layout model
does not see one: TeX sets its variables in a math font (CMMI) and its digits and operators in
the roman one, while a paragraph with an inline symbol stays text."""

from __future__ import annotations

from pathlib import Path

import matplotlib
import pymupdf

from h3.assets.layout import page_layout

FONTS = Path(matplotlib.get_data_path()) / "fonts" / "ttf"  # Computer Modern, bundled with it


def _write(page: pymupdf.Page, x: float, y: float, text: str, font: str) -> float:
    """`text` at (x, y) in a Computer Modern font; returns where the next run starts."""
    page.insert_text((x, y), text, fontname=font, fontfile=str(FONTS / f"{font}.ttf"), fontsize=10)
    return x + pymupdf.Font(fontfile=str(FONTS / f"{font}.ttf")).text_length(text, fontsize=10)


def test_a_displayed_formula_is_typed_by_its_fonts_and_a_paragraph_is_not(tmp_path):
    doc = pymupdf.open()
    page = doc.new_page()
    x = _write(page, 72, 100, "The force on the body follows from its mass ", "cmr10")
    x = _write(page, x, 100, "m", "cmmi10")
    _write(page, x, 100, " and the acceleration it is given.", "cmr10")
    x = _write(page, 250, 200, "a", "cmmi10")  # a2 + 8 = 12, as TeX sets it
    _write(page, x, 200, "2 + 8 = 12", "cmr10")
    kinds = {b.text.replace("\n", " "): b.type for b in page_layout(page, None, 72).blocks}
    formula = next(t for t in kinds if "8 = 12" in t)
    paragraph = next(t for t in kinds if "mass" in t)
    assert kinds[formula] == "formula"
    assert kinds[paragraph] == "text"
