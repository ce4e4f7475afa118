"""Structure rows: captions and context attached to tables and figures (pure, no store)."""

import json

from h3.resources.semantic.structures import caption_for, near_text, structure_rows


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


def test_a_footer_logo_is_known_by_the_running_foot_and_a_lone_figure_by_its_nearest_text():
    logo = region(0, "figure", [500, 760, 540, 785])
    foot = region(1, "footer", [60, 768, 300, 778], "Research Office, Tel. 02-788-4510")
    body = region(2, "text", [60, 100, 540, 300], "Body text far from the logo.")
    picture = region(3, "figure", [60, 420, 260, 560])
    bullet = region(4, "list", [280, 350, 400, 360], "ISV education and enablement")
    rows = structure_rows([logo, foot, body, picture, bullet])
    assert "Tel. 02-788-4510" in rows[0]["context"]  # same footer band, 200 points away
    blocks = [(r["bbox"], r["text"]) for r in (foot, body, bullet)]
    assert near_text(logo["bbox"], blocks, 792) == "Research Office, Tel. 02-788-4510"
    assert near_text([500, 400, 540, 425], blocks, 792) == ""  # mid-page: no band, none near
    # the only text within 96 points (diagonal, 64 away): taken although not within 48
    assert "ISV education" in rows[1]["context"] and "ISV education" in rows[1]["embed_text"]


def _lines(*specs):
    """(bbox, text, block) lines as the structures stage reads them from the PDF."""
    return [(list(b), t, n) for b, t, n in specs]


def test_side_by_side_captions_in_one_block_go_to_their_own_figures():
    left = region(0, "figure", [70, 530, 310, 697], extra={"caption": "Figure 7-26. A. Figure 7-27."})
    right = region(1, "figure", [320, 420, 560, 696])
    lines = _lines(([72, 702, 184, 713], "Figure 7-26. Self-locking nuts.", 9),
                   ([321, 700, 482, 711], "Figure 7-27. Stainless steel self-locking nut.", 9))
    rows = structure_rows([left, right], page_lines={1: lines})
    assert [r["caption"] for r in rows] == ["Figure 7-26. Self-locking nuts.",
                                             "Figure 7-27. Stainless steel self-locking nut."]
    assert [r["number"] for r in rows] == ["7-26", "7-27"]


def test_a_caption_inside_the_box_counts_a_sentence_citing_a_table_and_other_figures_do_not():
    shot = region(0, "figure", [54, 92, 558, 185])  # the model's box swallowed its caption
    code = region(1, "figure", [133, 300, 540, 372], "Example 3-10 Activating RCAC")
    table = region(2, "table", [65, 450, 547, 700], "| a | b |")
    lines = _lines(([137, 72, 450, 81], "3. Figure 3-10 shows the masks that are created.", 1),
                   ([65, 174, 293, 182], "Figure 3-10   Column masks shown in Navigator", 2),
                   ([137, 292, 375, 300], "Example 3-10   Activating RCAC on the table", 6),
                   ([65, 420, 540, 430], "Table 2-2 shows a comparison of the different", 8),
                   ([65, 432, 540, 442], "function usage IDs.", 8))
    regions = [shot, code, table]
    rows = structure_rows(regions, page_lines={1: lines})
    assert rows[0]["caption"] == "Figure 3-10 Column masks shown in Navigator"
    assert rows[1]["caption"] == "Example 3-10 Activating RCAC on the table"
    assert rows[2]["caption"] == ""  # a sentence about Table 2-2 is not its caption
    # without the PDF's lines, a figure region's text is never taken for another's caption
    assert structure_rows(regions)[2]["caption"] == ""


def test_a_logo_is_known_by_the_tagline_beside_it():
    logo = region(0, "figure", [145, 271, 179, 285])
    tagline = region(1, "text", [280, 237, 483, 287], "Expert help to achieve your goals")
    far = region(2, "text", [280, 500, 483, 520], "Unrelated paragraph lower down.")
    (row,) = structure_rows([logo, far, tagline])
    blocks = [(tagline["bbox"], tagline["text"]), (far["bbox"], far["text"])]
    assert near_text(logo["bbox"], blocks, 792) == "Expert help to achieve your goals"
    assert row["embed_text"].count("Expert help") == 1  # near text first, said once


def test_text_blocks_typed_table_outside_any_found_table_make_no_rows():
    table = dict(region(0, "table", [65, 395, 547, 721], "| a | b |"), origin="find_tables")
    caption = dict(region(1, "table", [65, 384, 392, 392], "Table 2-2 Comparison"),
                   origin="pymupdf")
    rows = structure_rows([caption, table])
    assert [r["region_id"] for r in rows] == ["d:p1:r0"]
    assert rows[0]["caption"] == "Table 2-2 Comparison"  # the fragment was its caption


def test_a_part_inside_a_captioned_figure_leaves_the_caption_to_the_whole():
    whole = region(0, "figure", [54, 166, 458, 683])
    part = region(1, "figure", [269, 198, 439, 299])
    lines = _lines(([100, 150, 300, 160], "[그림 4-5] 8대 미래 유망 보안기술 도출", 3))  # above both
    rows = structure_rows([whole, part], page_lines={1: lines})
    assert [r["caption"] for r in rows] == ["[그림 4-5] 8대 미래 유망 보안기술 도출", ""]
    assert [r["number"] for r in rows] == ["4-5", ""]
