"""Section-aware chunking and region assembly (pure functions, no models)."""

from __future__ import annotations

from dataclasses import replace

from h3.assets._chunking import build_chunks, build_regions
from h3.ontology.records import (
    FigureRecord,
    FiguresRecord,
    LayoutBlock,
    LayoutRecord,
    OcrRecord,
    PageLayout,
    RegionRecord,
    TableRecord,
    TablesRecord,
)


def words(text: str) -> int:
    return len(text.split())


def region(i: int, page: int, kind: str, text: str, y: float = 0.0) -> RegionRecord:
    return RegionRecord(doc_id="d", region_id=f"d:p{page}:r{i}", page=page, kind=kind,
                        bbox=(10.0, y, 100.0, y + 10), text=text, order=i, origin="pymupdf")


def one_page(blocks: list[dict]) -> LayoutRecord:
    """A one-page layout payload with these blocks (layoutparser's dict keys)."""
    page = PageLayout(page=1, width=600, height=800, rotation=0,
                      blocks=tuple(LayoutBlock(**b) for b in blocks))
    return LayoutRecord(source="d.pdf", pages=1, layout=(page,))


NO_TABLES = TablesRecord(source="d.pdf", tables=())
NO_FIGURES = FiguresRecord(source="d.pdf", figures=())
NO_OCR = OcrRecord(source="d.pdf")


def test_titles_start_sections_and_pages_split_chunks():
    regions = [region(0, 1, "title", "Intro"), region(1, 1, "text", "alpha beta", 20),
               region(2, 1, "title", "Method", 40), region(3, 1, "text", "gamma", 60),
               region(4, 2, "text", "delta epsilon", 0), region(5, 2, "footer", "page 2", 90)]
    chunks = build_chunks("d", regions, words, max_tokens=50)
    assert [(c.page, c.section, c.text) for c in chunks] == [
        (1, "Intro", "Intro\nalpha beta"), (1, "Method", "Method\ngamma"),
        (2, "Method", "delta epsilon")]
    assert chunks[0].bbox == (10.0, 0.0, 100.0, 30.0)  # union of title and paragraph
    assert chunks[0].region_ids == ("d:p1:r0", "d:p1:r1")


def test_budget_tables_and_long_text():
    long_text = ". ".join(f"sentence {i} has five words" for i in range(30))
    table = "| a | b |\n|---|---|\n" + "\n".join(f"| {i} | {i * 2} |" for i in range(40))
    regions = [region(0, 1, "text", "one two three"), region(1, 1, "text", "four five six"),
               region(2, 1, "table", table), region(3, 1, "text", long_text)]
    chunks = build_chunks("d", regions, words, max_tokens=20)
    assert chunks[0].text == "one two three\nfour five six"
    tables = [c for c in chunks if c.kind == "table"]
    assert len(tables) > 1 and all(c.text.startswith("| a | b |") for c in tables)
    assert all(c.token_count <= 30 for c in chunks)
    assert " ".join(c.text for c in chunks if c.kind == "text").count("sentence") == 30


def test_blocks_inside_a_table_are_folded_into_it():
    layout = one_page([
        {"x_1": 0, "y_1": 0, "x_2": 100, "y_2": 10, "text": "Heading", "type": "title"},
        {"x_1": 10, "y_1": 50, "x_2": 40, "y_2": 60, "text": "cell 1", "type": "table"},
        {"x_1": 0, "y_1": 200, "x_2": 100, "y_2": 210, "text": "after", "type": "text"}])
    tables = TablesRecord(source="d.pdf", tables=(TableRecord(
        page=1, bbox=(0, 40, 200, 120), rows=(("cell 1", "x"),), markdown="| cell 1 | x |",
        origin="find_tables"),))
    rows = build_regions("d", layout, tables, NO_FIGURES, NO_OCR)
    assert [(r.kind, r.text) for r in rows] == [
        ("title", "Heading"), ("table", "| cell 1 | x |"), ("text", "after")]
    assert [r.order for r in rows] == [0, 1, 2]


def test_a_block_typed_figure_that_no_figure_holds_is_text():
    """The figures stage rejected the layout model's box (text only): the blocks the model typed
    "figure" under it are text regions; a block inside a kept figure is folded into it."""
    layout = one_page([
        {"x_1": 0, "y_1": 0, "x_2": 300, "y_2": 40, "text": "We acquire content.", "type": "figure"},
        {"x_1": 10, "y_1": 110, "x_2": 90, "y_2": 120, "text": "axis 2015", "type": "figure"}])
    figures = FiguresRecord(source="d.pdf", figures=(FigureRecord(
        page=1, bbox=(0, 100, 200, 200), caption="Figure 1. Members", text="axis 2015",
        image_path="p1-f0.png", origin="layout-model"),))
    rows = build_regions("d", layout, NO_TABLES, figures, NO_OCR)
    assert [(r.kind, r.text) for r in rows] == [
        ("text", "We acquire content."), ("figure", "Figure 1. Members")]


def test_chunk_sizes_are_running_sums_not_recounts():
    """A page of many short paragraphs: the counter sees each text about once (re-counting the
    growing chunk made chunking quadratic in tokenizer work), and chunks still fit the budget."""
    seen: list[str] = []

    def counting_words(text: str) -> int:
        seen.append(text)
        return words(text)

    paragraphs = [region(i, 1, "text", " ".join(f"w{i}x{j}" for j in range(7)), i * 10.0)
                  for i in range(120)]
    long_text = ". ".join(f"sentence {i} has five words" for i in range(200))
    table = "| a | b |\n|---|---|\n" + "\n".join(f"| {i} | {i * 2} |" for i in range(300))
    regions = [*paragraphs, region(120, 1, "text", long_text, 2000.0),
               region(121, 1, "table", table, 2100.0)]
    chunks = build_chunks("d", regions, counting_words, max_tokens=50)
    total_chars = sum(len(r.text) for r in regions)
    assert sum(len(t) for t in seen) <= 3 * total_chars
    text_chunks = [c for c in chunks if c.kind == "text"]
    assert all(c.token_count <= 50 for c in text_chunks[:17])  # the packed paragraphs
    assert all(c.token_count == words(c.text) for c in chunks)
    assert " ".join(c.text for c in text_chunks).count("w119x6") == 1
    assert " ".join(c.text for c in text_chunks).count("sentence") == 200
    table_chunks = [c for c in chunks if c.kind == "table"]
    assert all(c.token_count <= 50 + 12 for c in table_chunks)  # + the repeated header
    assert sum(c.text.count("\n| ") for c in table_chunks) == 300  # every row, once


def test_table_chunks_carry_title_section_and_header_rows():
    """Issue 11: each table piece = section heading + the title/column-period lines set above
    the grid + its header row, then whole rows; columns holding only "$" or blanks go."""
    table = ("| Segment | $ | 2024 | | 2023 |\n|---|---|---|---|---|\n"
             + "\n".join(f"| Segment {i} | $ | {i}00 | | {i}50 |" for i in range(12)))
    regions = [region(0, 4, "title", "Segment information", 0),
               region(1, 4, "text", "a paragraph far above the table " * 3, 20),
               region(2, 4, "text", "Operating income by segment", 200),
               region(3, 4, "text", "(Dollars in millions) Years ended June 30, 2024 2023", 214),
               replace(region(4, 4, "table", table), bbox=(10.0, 220.0, 500.0, 400.0))]  # heads reach in
    tables = [c for c in build_chunks("d", regions, words, max_tokens=60) if c.kind == "table"]
    assert len(tables) > 1
    for c in tables:
        lines = c.text.splitlines()
        assert lines[:4] == ["Segment information", "Operating income by segment",
                             "(Dollars in millions) Years ended June 30, 2024 2023",
                             "| Segment | 2024 | 2023 |"]
        assert "far above" not in c.text and "| $ |" not in c.text
    rows = [ln for c in tables for ln in c.text.splitlines()[5:]]
    assert rows == [f"| Segment {i} | {i}00 | {i}50 |" for i in range(12)]


def test_a_pages_own_heading_labelled_header_is_kept_and_running_heads_are_not():
    """The layout model calls a statement's title at the top of a 10-K page "header", like the
    running heads: the title (on one page) names the section and leads its table's chunk; the
    running heads (on every page, page numbers aside) and labels stay out."""
    table = "| Revenues | 6,779,511 |\n|---|---|\n| Net income | 122,641 |"
    regions = []
    for page in (1, 2, 3, 4):
        regions += [region(0, page, "header", "Table of Contents"),
                    region(1, page, "header", f"ACME CORP  {page}", 5)]
    regions += [region(2, 1, "text", "Our business sells widgets.", 20),
                region(2, 2, "header", "CONSOLIDATED STATEMENTS OF OPERATIONS", 20),
                region(3, 2, "header", "(in thousands)", 32), region(4, 2, "table", table, 45),
                region(2, 3, "header", "Item 1A. Risk Factors", 20),
                region(3, 3, "text", "Competition may hurt us.", 35),
                region(2, 4, "text", "More risks.", 20)]
    regions.sort(key=lambda r: (r.page, r.bbox[1]))
    chunks = build_chunks("d", regions, words, max_tokens=60)
    every = "\n".join(c.text for c in chunks)
    assert "Table of Contents" not in every and "ACME" not in every
    (stmt,) = [c for c in chunks if c.kind == "table"]
    assert stmt.page == 2 and stmt.section == "CONSOLIDATED STATEMENTS OF OPERATIONS"
    assert stmt.text.startswith("CONSOLIDATED STATEMENTS OF OPERATIONS\n(in thousands)\n| Revenues")
    risk = [c for c in chunks if c.page == 3]
    assert [(c.section, c.text) for c in risk] == [
        ("Item 1A. Risk Factors", "Item 1A. Risk Factors\nCompetition may hurt us.")]
    assert [c.section for c in chunks if c.page == 4] == ["Item 1A. Risk Factors"]


def test_a_one_page_documents_headers_stay_out():
    regions = [region(0, 1, "header", "ACME CORP"), region(1, 1, "text", "alpha beta", 20)]
    assert [c.text for c in build_chunks("d", regions, words, max_tokens=50)] == ["alpha beta"]


def test_a_table_region_with_no_grid_is_text_or_a_heading():
    """The layout model's table box covers a statement's title and column periods that no grid
    takes in: the title names the section, the periods lead the table's chunk, a note under the
    table joins the text, and only the grid is a table chunk."""
    grid = "| Sales of products | $55,893 | $51,386 |\n|---|---|---|\n| Total revenues | 66,608 | 62,286 |"
    regions = [region(0, 1, "title", "Commodity Price Risk"), region(1, 1, "text", "Prices vary.", 10),
               region(0, 2, "table", "The Boeing Company and Subsidiaries\nConsolidated Statements of Operations", 90),
               region(1, 2, "table", "(Dollars in millions)\nYears ended December 31,\n2022\n2021", 120),
               region(2, 2, "table", grid, 147),
               region(3, 2, "table", "See Notes to the Consolidated Financial Statements.", 490)]
    chunks = build_chunks("d", regions, words, max_tokens=60)
    (table,) = [c for c in chunks if c.kind == "table"]
    section = "The Boeing Company and Subsidiaries Consolidated Statements of Operations"
    assert table.section == section
    assert table.text.startswith(section + "\n(Dollars in millions) Years ended December 31, "
                                    "2022 2021\n| Sales of products |")
    assert [c.text for c in chunks if c.page == 2 and c.kind != "table"] == [
        "The Boeing Company and Subsidiaries\nConsolidated Statements of Operations\n"
        "(Dollars in millions)\nYears ended December 31,\n2022\n2021",
        "See Notes to the Consolidated Financial Statements."]
