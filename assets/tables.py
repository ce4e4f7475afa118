"""Stage 3: tables. Ruled grids from `find_tables(use_layout=False)` (cells read with
`get_textbox`, since `extract()` garbles decimals: MODELS.md), tables the layout model sees
that have no ruling (rows rebuilt from text lines), and unruled tables inside boxes the model
took for figures (found from the alignment of their words: assets/_aligned_tables.py)."""


from pathlib import Path

import pymupdf
from dagster import AssetExecutionContext

from h3.assets._aligned_tables import aligned_tables
from h3.assets._batch import per_document_on_workers, summary_metadata
from h3.assets._page_space import page_box
from h3.assets.partitioning import document_asset
from h3.ontology.records import DocumentRecord, LayoutRecord, TableRecord, TablesRecord

MIN_DRAWINGS = 4  # a ruled table needs some vector lines on the page
TABLES_S_PER_PAGE = 0.01  # finding a page's tables on one core, roughly


def _cell_text(words: list, cell) -> str:
    """The words whose centre lies in the cell, in reading order. Words come from one
    `get_text("words")` call per page: `get_textbox` per cell re-extracts the page each time
    (~80 ms a cell), and `extract()` garbles decimals (MODELS.md)."""
    if not cell:
        return ""
    x0, y0, x1, y1 = cell
    inside = [w for w in words if x0 <= (w[0] + w[2]) / 2 <= x1 and y0 <= (w[1] + w[3]) / 2 <= y1]
    inside.sort(key=lambda w: (w[5], w[6], w[7]))  # block, line, word number
    return " ".join(w[4] for w in inside)


def rows_to_markdown(rows: list[list[str]]) -> str:
    if not rows:
        return ""
    width = max(len(r) for r in rows)
    rows = [r + [""] * (width - len(r)) for r in rows]
    lines = ["| " + " | ".join(rows[0]) + " |", "|" + "---|" * width]
    lines += ["| " + " | ".join(r) + " |" for r in rows[1:]]
    return "\n".join(lines)


def _overlaps(a: list[float], b: list[float], share: float = 0.5) -> bool:
    w = min(a[2], b[2]) - max(a[0], b[0])
    h = min(a[3], b[3]) - max(a[1], b[1])
    smaller = min((a[2] - a[0]) * (a[3] - a[1]), (b[2] - b[0]) * (b[3] - b[1])) or 1e-6
    return w > 0 and h > 0 and w * h / smaller >= share


def page_tables(page: pymupdf.Page, model_boxes: list[list[float]],
                model_ran: bool = False,
                figure_boxes: list[list[float]] | None = None) -> list[TableRecord]:
    """Tables on one page. The grid search
    (~0.1 s a page) runs where the layout model saw a table, or, on pages the model did not
    look at, where there are enough vector lines to draw one; the word-alignment search (a few
    ms) runs inside the model's `figure_boxes`."""
    found: list[TableRecord] = []
    search: pymupdf.Rect | None = None
    if model_boxes:  # only look where the model saw tables: find_tables is slow on busy pages
        search = pymupdf.Rect(model_boxes[0])
        for box in model_boxes[1:]:
            search |= pymupdf.Rect(box)
        search = (search + (-12, -12, 12, 12)) & page_box(page)
    elif not model_ran and len(page.get_cdrawings()) >= MIN_DRAWINGS:
        search = page_box(page)
    if search is not None:
        words = page.get_text("words")
        # find_tables works on the page as displayed: on a rotated page its clip and boxes are
        # rotated, every other box here is not (assets/_page_space.py)
        back = page.derotation_matrix
        found_grid = page.find_tables(clip=search * page.rotation_matrix, use_layout=False)
        for table in found_grid.tables:
            rows = [[_cell_text(words, c and pymupdf.Rect(c) * back) for c in row.cells]
                    for row in table.rows]
            rows = [r for r in rows if any(r)]
            if len(rows) < 2:
                continue
            found.append(_table(page, pymupdf.Rect(table.bbox) * back, rows, "find_tables"))
    for box in model_boxes:  # unruled tables: one row per text line, cells split on big gaps
        if any(_overlaps(box, t.bbox) for t in found):
            continue
        words = page.get_text("words", clip=pymupdf.Rect(box))
        lines: dict[tuple, list] = {}
        for w in words:
            lines.setdefault((w[5], w[6]), []).append(w)
        rows = []
        for line in lines.values():
            line.sort(key=lambda w: w[0])
            cells, current, last_x1 = [], [], None
            for w in line:
                if last_x1 is not None and w[0] - last_x1 > 8:  # a column gap, not a space
                    cells.append(" ".join(current))
                    current = []
                current.append(w[4])
                last_x1 = w[2]
            cells.append(" ".join(current))
            rows.append(cells)
        if rows:
            found.append(_table(page, box, rows, "layout-model"))
    for box in figure_boxes or []:  # tables the model took for pictures
        for table in aligned_tables(page, box):
            if not any(_overlaps(table["bbox"], t.bbox) for t in found):
                found.append(_table(page, table["bbox"], table["rows"], "text-alignment"))
    return found


def _table(page: pymupdf.Page, bbox, rows: list[list[str]], origin: str) -> TableRecord:
    return TableRecord(page=page.number + 1, bbox=tuple(round(v, 2) for v in bbox),
                       rows=tuple(map(tuple, rows)), markdown=rows_to_markdown(rows),
                       origin=origin)


def document_tables(doc: DocumentRecord, lay: LayoutRecord) -> TablesRecord:
    """One document's tables (a document worker may run it: resources/document_workers.py)."""
    out: list[TableRecord] = []
    garbled = set(doc.garbled_pages)  # cells would be glyph garbage
    with pymupdf.open(Path(doc.source)) as pdf:
        for page_layout in lay.layout:
            if page_layout.page in garbled:
                continue
            out += page_tables(pdf[page_layout.page - 1], page_layout.boxes_of("table"),
                               page_layout.model, page_layout.boxes_of("figure"))
    return TablesRecord(source=doc.source, tables=tuple(out))


@document_asset(group_name="ingestion", kinds={"pdf"},
       description="Tables with their cell text (markdown) and bbox, per page.")
def tables(context: AssetExecutionContext, documents: dict, layout: dict) -> dict:
    results = per_document_on_workers(
        context, document_tables, (documents, layout), (DocumentRecord, LayoutRecord),
        cost_s=lambda records: records[1].pages * TABLES_S_PER_PAGE)
    preview = [{"doc_id": k, "page": t["page"], "origin": t["origin"], "rows": len(t["rows"]),
                "first row": " / ".join(t["rows"][0])}
               for k, v in results.items() for t in (v.get("tables") or [])]
    context.add_output_metadata(summary_metadata(results, "tables", preview))
    return results
