"""Numbered captions ("Figure 3-10 ...", "Table 2:", "Example 1-1", "表 1", "[표 1]") read from a
page's text lines, and the one that belongs to a table or figure region.

Why lines and not blocks: PyMuPDF often puts two captions that share a baseline in one block
(two figures side by side, "Figure 7-26 ... Figure 7-27 ..."), and layout boxes often swallow
the caption under a figure; a caption is a line that starts with a label and a number, plus the
lines of its block that continue it.
"""

from __future__ import annotations

import re

from h3.ontology.boxes import h_overlap, union

# a label and its number, not followed by a verb: "Table 2-2 shows ..." opens a sentence that
# refers to the table, "Table 2-2 Comparison of ..." is its caption
CAPTION_NUMBER = re.compile(
    r"^\s*[\[(]?\s*(?:table|tab\.|figure|fig\.?|chart|exhibit|equation|eq\.|example|listing|"
    r"plate|表|图|図|표|그림)\s*(\d+(?:[.-]\d+)*)(?![.-]?\d)"
    r"(?!\W*(?:shows?|lists?|describes?|contains?|summari[sz]es|presents?|provides?|gives?|"
    r"illustrates?|depicts?|displays?|compares?|reports?|is|are|was|were|and|or|to|in|of|on|for|"
    r"with|as|at|by|from)\b)", re.IGNORECASE)
CAPTION_GAP = 72.0  # points: a caption is at most an inch from its table or figure
EDGE_CAPTION = 36.0  # points: a caption inside a region's box sits this close to its edge
LINE_GAP = 6.0  # points: a continuation line starts at most this far below the previous one
MAX_LINES = 3  # lines a caption may run to
UNUSUAL_SIDE = 12.0  # points added to a caption above a figure or below a table

Line = tuple[list[float], str, int]  # (bbox, text, block number), in reading order
Segment = tuple[list[float], str]  # (bbox, text) of one caption


def caption_segments(lines: list[Line]) -> list[Segment]:
    """Each numbered caption of a page: the line that starts it plus up to MAX_LINES - 1 lines
    of the same block right below it."""
    segments: list[Segment] = []
    current: list | None = None  # [bbox, text, block, lines]
    for bbox, text, block in lines:
        if CAPTION_NUMBER.match(text):
            if current:
                segments.append((current[0], current[1]))
            current = [list(bbox), " ".join(text.split()), block, 1]
            continue
        if (current and block == current[2] and current[3] < MAX_LINES
                and h_overlap(bbox, current[0]) and 0 <= bbox[1] - current[0][3] + 2 <= LINE_GAP):
            current = [union(current[0], bbox), f"{current[1]} {' '.join(text.split())}",
                       block, current[3] + 1]
            continue
        if current:
            segments.append((current[0], current[1]))
            current = None
    if current:
        segments.append((current[0], current[1]))
    return segments


def _distance(box: list[float], seg: list[float], kind: str) -> float | None:
    """How far a caption lies from a region (None: too far, or not beside it)."""
    if not h_overlap(box, seg):
        return None
    w = min(box[2], seg[2]) - max(box[0], seg[0])
    h = min(box[3], seg[3]) - max(box[1], seg[1])
    seg_area = max((seg[2] - seg[0]) * (seg[3] - seg[1]), 1e-6)
    if h > 0 and w * h >= 0.5 * seg_area:  # inside the box: only at its top or bottom edge
        edge = min(seg[1] - box[1], box[3] - seg[3])
        return 0.0 if edge <= EDGE_CAPTION else None
    if seg[1] >= box[3] - 2:
        gap = max(seg[1] - box[3], 0.0) + (UNUSUAL_SIDE if kind == "table" else 0.0)
    elif seg[3] <= box[1] + 2:
        gap = max(box[1] - seg[3], 0.0) + (UNUSUAL_SIDE if kind != "table" else 0.0)
    else:
        return None
    return gap if gap <= CAPTION_GAP else None


def numbered_caption(box: list[float], kind: str, segments: list[Segment]) -> str:
    """The nearest numbered caption of a region: inside its box at an edge, else below a figure
    or above a table, else on the other side; "" when none is within CAPTION_GAP."""
    best, best_d = "", None
    for seg_box, text in segments:
        d = _distance(box, seg_box, kind)
        if d is not None and (best_d is None or d < best_d):
            best, best_d = text, d
    return best
