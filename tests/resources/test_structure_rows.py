"""Structure rows: captions and context attached to tables and figures (pure, no store)."""

import json

from resources.semantic.structures import caption_for, structure_rows


def region(i, kind, bbox, text="", page=1, extra=None):
    return {"doc_id": "d", "region_id": f"d:p{page}:r{i}", "page": page, "kind": kind,
            "bbox": bbox, "text": text, "order": i,
            "extra_json": json.dumps(extra) if extra else None}


def test_table_takes_the_nearest_caption_and_its_number():
    regions = [
        region(0, "text", [50, 50, 500, 90], "Revenue grew in every quarter."),
        region(1, "caption", [50, 100, 500, 115], "Table 2: Quarterly results"),
        region(2, "table", [50, 120, 500, 300], "| Q1 | 10.4 |"),
        region(3, "caption", [50, 700, 500, 715], "Table 3: Far below, another table's"),
        region(4, "text", [50, 320, 500, 360], "Orders followed revenue."),
    ]
    (row,) = structure_rows(regions)
    assert row["caption"] == "Table 2: Quarterly results" and row["number"] == "2"
    assert "Revenue grew" in row["context"] and "Orders followed" in row["context"]
    assert row["bbox"] == [50.0, 120.0, 500.0, 300.0] and row["text"] == row["caption"]


def test_figure_keeps_its_own_caption_and_uncaptioned_ones_still_get_a_row():
    fig = region(0, "figure", [60, 60, 300, 260], "Figure 1: Revenue by quarter",
                 extra={"caption": "Figure 1: Revenue by quarter", "inner_text": "Q1 Q2"})
    lone = region(1, "figure", [60, 400, 300, 600], "", page=2)
    rows = structure_rows([fig, lone])
    assert caption_for(fig, [fig]) == "Figure 1: Revenue by quarter"
    assert rows[0]["number"] == "1" and "Q1 Q2" in rows[0]["search_text"]
    assert rows[1]["caption"] == "" and rows[1]["text"] == "figure on page 2"


def test_text_regions_make_no_rows():
    assert structure_rows([region(0, "text", [0, 0, 1, 1], "hello")]) == []
