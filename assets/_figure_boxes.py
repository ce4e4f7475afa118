"""Where the figures of a page are: the layout model's figure boxes, embedded raster images (tiles
joined) and clustered vector drawings (logos, charts, diagrams), de-duplicated.

Why three sources: the layout model runs at a low resolution and misses small logos and pictures;
`get_image_info` finds every placed raster image whatever its size; `cluster_drawings` finds
vector graphics that no model or image list sees. Each source alone over- or under-reports, so
the filters below drop what is not a figure in any document: specks and rules (too small or
too thin), page backgrounds (nearly the whole page), shaded text boxes (mostly covered by text)
and table rulings (inside a table found by the `tables` stage). The layout model's own boxes
are kept unless they hold nothing a figure is drawn with - no raster image, no curve or slanted
line - and are mostly text (`_text_only`): on SEC filings it calls paragraphs and ruled
statements "figure" (64 of the 66 figure boxes of one development 10-K, with row shading and
rules but no picture), and those are text and tables.
"""

from __future__ import annotations

import pymupdf

from h3.assets._page_space import page_box
from h3.ontology.boxes import Box, area, inter, iou, union

MIN_SIDE = 12.0           # points: thinner than this is a rule, bullet or speck
MIN_AREA_SHARE = 0.0008   # of the page: ~ a 19 x 19 pt icon on a Letter page
MAX_AREA_SHARE = 0.85     # of the page: larger is a background or a scanned page
TILE_GAP = 2.0            # points: raster tiles this close are one picture
MAX_TEXT_COVER = 0.5      # a drawing covered more by text than this is a shaded text box
SAME_FIGURE_IOU = 0.5     # two boxes overlapping this much are one figure (union kept)
PART_OF = 0.9             # a box this much inside a kept box ...
PART_AREA_RATIO = 4.0     # ... that is at most this many times larger is a part of it
MAX_DRAWINGS = 4000       # cluster_drawings is Python-heavy: skip it on pathological pages
MAX_PLAIN_SHAPES = 2      # a cluster of at most this many rectangles/rules draws no figure
BACKDROP_SHARE = 0.25     # of the page: a shaded panel this large behind text is a backdrop
BLEED = 36.0              # points: drawings may run this far off the page (full-bleed artwork)
PIECE_GAP = 6.0           # points: side-by-side pieces this close are one logo (mark + wordmark)
PIECE_MAX_SHARE = 0.02    # ... when each is at most this share of the page (a small graphic)
THIN = 3.0                # points: a drawing this thin is a rule or an underline, whatever its path
TEXT_ONLY_COVER = 0.35    # a model "figure" with no picture in it and this much text is text


def join_tiles(boxes: list[Box], gap: float = TILE_GAP) -> list[Box]:
    """Unions boxes that overlap or touch within `gap` points (an image split into strips)."""
    out: list[Box] = []
    for box in sorted(boxes, key=lambda b: (b[1], b[0])):
        grown = [box[0] - gap, box[1] - gap, box[2] + gap, box[3] + gap]
        for i, kept in enumerate(out):
            if inter(grown, kept) > 0:
                out[i] = union(kept, box)
                break
        else:
            out.append(list(box))
    # one pass can leave two grown boxes touching each other: repeat until stable
    return out if len(out) == len(boxes) else join_tiles(out, gap)


def _plausible(box: Box, page_area: float) -> bool:
    w, h = box[2] - box[0], box[3] - box[1]
    return (min(w, h) >= MIN_SIDE and MIN_AREA_SHARE * page_area <= w * h
            <= MAX_AREA_SHARE * page_area)


def _text_cover(box: Box, text_boxes: list[Box]) -> float:
    return min(sum(inter(box, t) for t in text_boxes) / max(area(box), 1e-6), 1.0)


def _inside_any(box: Box, others: list[Box], share: float = 0.5) -> bool:
    return any(inter(box, o) >= share * max(area(box), 1e-6) for o in others)


def _within(inner: Box, outer: Box, slack: float = 1.0) -> bool:
    """Whether `inner` lies in `outer` (by coordinates: a straight rule has no area)."""
    return (inner[0] >= outer[0] - slack and inner[1] >= outer[1] - slack
            and inner[2] <= outer[2] + slack and inner[3] <= outer[3] + slack)


def image_boxes(page: pymupdf.Page) -> list[Box]:
    """Placed raster images (tiles joined), clipped to the page."""
    boxes = []
    for info in page.get_image_info():
        rect = pymupdf.Rect(info["bbox"]) & page_box(page)
        if not rect.is_empty:
            boxes.append(list(rect))
    return join_tiles(boxes)


def _is_boxy(item: dict) -> bool:
    """A rectangle or an axis-aligned line: what frames, shades or rules text and tables."""
    for op in item["items"]:
        if op[0] == "re" or op[0] == "qu" and op[1].is_rectangular:
            continue
        if op[0] == "l" and (abs(op[1].x - op[2].x) < 0.5 or abs(op[1].y - op[2].y) < 0.5):
            continue
        return False
    return True


def drawing_boxes(page: pymupdf.Page, text_boxes: list[Box]) -> list[Box]:
    """Clusters of vector drawings (PyMuPDF joins paths closer than 3 points), less the ones
    that frame text: only rectangles/straight rules with text inside (shaded text boxes, heading
    bars, unruled tables) or mostly covered by text, and the bare bars and frames (one or two
    rectangles or rules, nothing else), and the backdrops (a shaded panel behind a quarter of the
    page or more, with text on it). A rejected cluster is searched once more without its frame:
    a logo or icon drawn on a shaded panel joins the panel's cluster."""
    if len(page.get_cdrawings()) == 0 or len(page.get_cdrawings()) > MAX_DRAWINGS:
        return []
    # cluster_drawings keeps only paths wholly inside its clip (the page by default): artwork
    # that bleeds past the edge, even by a rounding error, would vanish without the margin
    return _clusters(page, page.get_drawings(), page_box(page) + (-BLEED, -BLEED, BLEED, BLEED),
                     text_boxes, inner=False)


def _is_frame(d: dict, cluster: Box) -> bool:
    """A drawing that spans half its cluster's width or height: a panel, border or rule."""
    r = d["rect"]
    return (r.width >= 0.5 * (cluster[2] - cluster[0])
            or r.height >= 0.5 * (cluster[3] - cluster[1]))


def _clusters(page: pymupdf.Page, drawings: list[dict], clip, text_boxes: list[Box],
              inner: bool) -> list[Box]:
    out = []
    bounds = page_box(page)
    for rect in page.cluster_drawings(clip=clip, drawings=drawings):
        box = list(pymupdf.Rect(rect) & bounds)
        if area(box) <= 0:
            continue
        cover = _text_cover(box, text_boxes)
        inside = [d for d in drawings if _within(list(d["rect"]), list(rect))]  # unclipped
        boxy = all(_is_boxy(d) for d in inside)
        # a shaded panel behind a large part of the page, with text on it: a backdrop
        backdrop = (area(box) >= BACKDROP_SHARE * bounds.width * bounds.height
                    and cover >= 0.05 and any(_is_boxy(d) and area(list(d["rect"]))
                                              >= 0.9 * area(list(rect)) for d in inside))
        if not (backdrop or cover > MAX_TEXT_COVER or (cover >= 0.05 and boxy)
                or (boxy and len(inside) <= MAX_PLAIN_SHAPES)):
            out.append(box)
        elif not inner:  # a backdrop, bar, frame or shaded text box: look inside without it
            rest = [d for d in inside if not _is_frame(d, list(rect))]
            if 0 < len(rest) < len(inside):
                out += _clusters(page, rest, rect, text_boxes, inner=True)
    return out


def join_pieces(boxes: list[Box], page_area: float) -> list[Box]:
    """Unions small boxes that sit side by side on one line, at most PIECE_GAP apart: the mark
    and the wordmark of one logo are drawn as separate clusters."""
    small = PIECE_MAX_SHARE * page_area
    out: list[Box] = []
    for box in sorted(boxes, key=lambda b: (b[0], b[1])):
        for i, kept in enumerate(out):
            rows_overlap = min(box[3], kept[3]) - max(box[1], kept[1])
            if (area(box) <= small and area(kept) <= small
                    and rows_overlap >= 0.5 * min(box[3] - box[1], kept[3] - kept[1])
                    and max(box[0], kept[0]) - min(box[2], kept[2]) <= PIECE_GAP):
                out[i] = union(kept, box)
                break
        else:
            out.append(list(box))
    return out if len(out) == len(boxes) else join_pieces(out, page_area)


def picture_marks(page: pymupdf.Page) -> list[Box] | None:
    """Where the page draws something only a picture draws: curves, slanted lines and filled
    shapes other than rectangles (chart lines, pie slices, logos, diagrams' arrows), less the
    thin ones (rules, underlines). None where the page has too many drawings to look at."""
    n = len(page.get_cdrawings())
    if n > MAX_DRAWINGS:
        return None
    if n == 0:
        return []
    return [list(d["rect"]) for d in page.get_drawings()
            if not _is_boxy(d) and min(d["rect"].width, d["rect"].height) >= THIN]


def _text_only(box: Box, images: list[Box], marks: list[Box] | None, text_boxes: list[Box]) -> bool:
    """A layout-model figure box with no raster image and no picture mark in it, mostly covered
    by text: a paragraph, a list or a ruled table the model took for a figure."""
    if marks is None:
        return False  # not looked at: the model's call stands
    if any(inter(i, box) > 0.2 * max(area(i), 1e-6) for i in images):
        return False
    if any(inter(m, box) >= 0.5 * max(area(m), 1e-6) for m in marks):
        return False
    return _text_cover(box, text_boxes) >= TEXT_ONLY_COVER


def figure_boxes(page: pymupdf.Page, model_boxes: list[Box], text_boxes: list[Box],
                 table_boxes: list[Box]) -> list[tuple[Box, str]]:
    """Figure boxes of one page with their origin ("layout-model", "image", "drawing"); the model
    boxes come first and absorb the image/drawing boxes that coincide with them. A model box
    that is text only (`_text_only`) is left out."""
    page_area = page.rect.width * page.rect.height
    every_image = image_boxes(page)
    if model_boxes:
        marks = picture_marks(page)
        model_boxes = [b for b in model_boxes
                       if not _text_only(list(b), every_image, marks, text_boxes)]
    candidates = [(list(b), "layout-model") for b in model_boxes]
    images = [b for b in every_image if _plausible(b, page_area)]
    drawings = [b for b in drawing_boxes(page, text_boxes) if _plausible(b, page_area)]
    pieces = join_pieces(images + drawings, page_area)
    pieces = [(b, "image" if any(inter(b, i) > 0 for i in images) else "drawing") for b in pieces]
    candidates += sorted(pieces, key=lambda bo: bo[1] != "image")  # images first, as before
    kept: list[tuple[Box, str]] = []
    for box, origin in candidates:
        if origin != "layout-model" and _inside_any(box, table_boxes):
            continue  # table rulings or a table's cell shading: the tables stage owns them
        if origin != "layout-model" and sum(
                inter(k, box) >= PART_OF * area(k) for k in model_boxes) >= 2:
            continue  # a drawing that bridges figures the model saw apart: their union
        for i, (k, k_origin) in enumerate(kept):
            if iou(k, box) >= SAME_FIGURE_IOU:
                kept[i] = (union(k, box), k_origin)
                break
            if inter(box, k) >= PART_OF * area(box) and area(k) <= PART_AREA_RATIO * area(box):
                break  # a piece of a figure already kept
        else:
            kept.append((box, origin))
    return kept
