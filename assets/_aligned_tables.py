"""Unruled tables found from the alignment of their words: rows of three or more short cells
whose columns line up, stacked without a break. Used inside the boxes the layout model calls
figures, because PP-PicoDet takes a table without rulings for a picture often enough (docling's
test corpus has a file named for it) and `find_tables(use_layout=False)` only sees ruled grids.

Why these thresholds: body text in columns also gives several "cells" per line, but its lines
are long (24+ characters), so prose blocks are set aside first and a row counts only when its cells
are short; a run needs three rows so that a pair of aligned lines is not a table.
"""

from __future__ import annotations

import statistics
from collections import Counter

import pymupdf

from h3.resources.semantic.captions import CAPTION_NUMBER

Box = list[float]
ROW_TOL = 3.0        # points: words whose vertical centres are this close share a row
CELL_GAP = 8.0       # points: a horizontal gap wider than this separates cells (as tables.py)
ALIGN_TOL = 4.0      # points: cell edges this close are one column
MIN_COLS = 3
MIN_ROWS = 3
MAX_CELL_WORDS = 4   # median words per cell of a table row (prose lines have many more)
MAX_HEADER_ROWS = 3  # short rows just above the run (column headings) join the table
HEADER_SLACK = 12.0  # points: headings may stick out this much past the columns below
MIN_WORDS = 20       # a figure box with fewer words cannot hold such a table
PROSE_CHARS = 24     # characters per line, on average, of a block of running text

Cell = tuple[float, float, float, float, str]  # x0, y0, x1, y1, text


def _rows(words: list) -> list[list[Cell]]:
    """Words -> rows of cells, top to bottom, each row left to right."""
    rows: list[list] = []
    for w in sorted(words, key=lambda w: ((w[1] + w[3]) / 2, w[0])):
        centre = (w[1] + w[3]) / 2
        if rows and abs(centre - (rows[-1][0][1] + rows[-1][0][3]) / 2) <= ROW_TOL:
            rows[-1].append(w)
        else:
            rows.append([w])
    out = []
    for row in rows:
        row.sort(key=lambda w: w[0])
        cells: list[list] = [[row[0]]]
        for w in row[1:]:
            if w[0] - cells[-1][-1][2] > CELL_GAP:
                cells.append([w])
            else:
                cells[-1].append(w)
        out.append([(min(w[0] for w in c), min(w[1] for w in c), max(w[2] for w in c),
                     max(w[3] for w in c), " ".join(w[4] for w in c)) for c in cells])
    return out


def _without_prose(words: list) -> list:
    """Drops the words of prose blocks (two or more lines of PROSE_CHARS+ characters on
    average): a paragraph in the next column would share its baselines with the table's rows."""
    lines: dict[int, set] = {}
    chars: dict[int, int] = {}
    for w in words:
        lines.setdefault(w[5], set()).add(w[6])
        chars[w[5]] = chars.get(w[5], 0) + len(w[4]) + 1
    prose = {b for b, ls in lines.items() if len(ls) >= 2 and chars[b] / len(ls) >= PROSE_CHARS}
    return [w for w in words if w[5] not in prose]


def _short(row: list[Cell]) -> bool:
    return statistics.median(len(c[4].split()) for c in row) <= MAX_CELL_WORDS


def _aligned(row: list[Cell], above: list[Cell]) -> bool:
    """At least two cells of `row` start or end where a cell of `above` does."""
    def near(x: float, xs: list[float]) -> bool:
        return any(abs(x - v) <= ALIGN_TOL for v in xs)
    starts, ends = [c[0] for c in above], [c[2] for c in above]
    return sum(near(c[0], starts) or near(c[2], ends) for c in row) >= 2


def _close(row: list[Cell], above: list[Cell]) -> bool:
    height = max(c[3] - c[1] for c in row)
    return min(c[1] for c in row) - max(c[3] for c in above) <= 2.5 * height


def aligned_tables(page: pymupdf.Page, box: Box) -> list[dict]:
    """Unruled tables inside `box`: {"bbox", "rows"} (rows of cell texts)."""
    words = page.get_text("words", clip=pymupdf.Rect(box))
    if len(words) < MIN_WORDS:
        return []
    rows = _rows(_without_prose(words))
    tables, run = [], []
    for i, row in enumerate(rows + [[]]):  # the empty sentinel closes the last run
        tabular = len(row) >= MIN_COLS and _short(row)
        if tabular and run and _close(row, rows[run[-1]]) and _aligned(row, rows[run[-1]]):
            run.append(i)
            continue
        if len(run) >= MIN_ROWS and _regular(rows, run):
            tables.append(_with_headers(rows, run))
        run = [i] if tabular else []
    return [{"bbox": [min(c[0] for r in t for c in r), min(c[1] for r in t for c in r),
                      max(c[2] for r in t for c in r), max(c[3] for r in t for c in r)],
             "rows": [[c[4] for c in r] for r in t]} for t in tables]


def _regular(rows: list[list[Cell]], run: list[int]) -> bool:
    """At least MIN_ROWS rows of the run have the same number of cells: a table's grid, not the
    scattered labels of a diagram."""
    return Counter(len(rows[i]) for i in run).most_common(1)[0][1] >= MIN_ROWS


def _with_headers(rows: list[list[Cell]], run: list[int]) -> list[list[Cell]]:
    """The run's rows plus the short rows just above it that lie within its columns."""
    left = min(c[0] for i in run for c in rows[i]) - HEADER_SLACK
    right = max(c[2] for i in run for c in rows[i]) + HEADER_SLACK
    first = run[0]
    while first > 0 and run[0] - first < MAX_HEADER_ROWS:
        above = rows[first - 1]
        if CAPTION_NUMBER.match(above[0][4]):
            break  # "Table 2-1 ...": the caption, which structure rows read on their own
        if not (_short(above) and _close(rows[first], above)
                and all(left <= c[0] and c[2] <= right for c in above)):
            break
        first -= 1
    return rows[first:run[-1] + 1]
