"""Unruled tables from word alignment (assets/_aligned_tables.py) and their use by the tables
stage inside boxes the layout model called figures, on a PDF written here."""

from __future__ import annotations

import pymupdf

from h3.assets._aligned_tables import aligned_tables
from h3.assets.tables import page_tables
from h3.ontology.boxes import iou

ROWS = [("Persons with disabilities", "12", "4"), ("Children", "31", "9"),
        ("Women", "27", "11"), ("The elderly", "8", "2"), ("Migrants", "5", "1")]
PROSE = ("The survey asked every country whether legal aid is provided by the State or by "
         "civil society organisations, and at which level of government it is organised.")


def _page() -> pymupdf.Page:
    """Two columns of prose on the left, a table with no rulings on the right: headings on
    two lines, then five rows of a label and two numbers."""
    doc = pymupdf.open()
    page = doc.new_page(width=842, height=595)
    page.insert_textbox(pymupdf.Rect(40, 60, 200, 500), PROSE * 4, fontsize=10)
    page.insert_textbox(pymupdf.Rect(220, 60, 380, 500), PROSE * 4, fontsize=10)
    page.insert_text((610, 200), "State funded", fontsize=9)
    page.insert_text((700, 200), "CSOs", fontsize=9)
    page.insert_text((610, 211), "legal aid", fontsize=9)
    for i, (label, a, b) in enumerate(ROWS):
        y = 230 + 18 * i
        page.insert_text((440, y), label, fontsize=9)
        page.insert_text((620, y), a, fontsize=9)
        page.insert_text((705, y), b, fontsize=9)
    return page


def test_aligned_rows_make_a_table_with_its_headings_prose_does_not():
    page = _page()
    tables = aligned_tables(page, [30, 40, 820, 560])
    assert len(tables) == 1, tables
    table = tables[0]
    assert iou(table["bbox"], [440, 192, 725, 305]) >= 0.8, table["bbox"]
    assert table["rows"][-5:] == [list(r) for r in ROWS]
    assert ["State funded", "CSOs"] in table["rows"] and ["legal aid"] in table["rows"]
    assert aligned_tables(page, [30, 40, 400, 560]) == []  # the two columns of prose alone


def test_tables_stage_looks_inside_model_figures_only():
    page = _page()
    figure = [420, 40, 830, 560]  # the layout model called the right half a picture
    found = page_tables(page, [], model_ran=True, figure_boxes=[figure])
    assert [t.origin for t in found] == ["text-alignment"]
    assert "| Children | 31 | 9 |" in found[0].markdown
    assert page_tables(page, [], model_ran=True) == []  # no figure box: no search


def test_scattered_diagram_labels_are_no_table():
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    rows = ((450, range(90, 430, 45)), (462, range(90, 475, 45)), (474, range(90, 430, 90)))
    for y, xs in rows:  # 8, 9 and 4 labels, lined up, but no two rows share a grid
        for x in xs:
            page.insert_text((x, y), "Edge AI", fontsize=7)
    page.insert_text((90, 300), "A long enough caption so the box holds words. " * 3, fontsize=7)
    assert aligned_tables(page, [40, 100, 580, 700]) == []
