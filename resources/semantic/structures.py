"""Structure rows: each table, figure and formula region with its caption and the text around
it, which is what a reader (and structural recall) identifies it by.

"Around" is both reading order (the blocks just before and after) and geometry (the blocks
nearest on the page, and for a logo or stamp in a page's header or footer band, the running head
or foot beside it): a figure with no caption is only known by the text next to it, which reading
order misses when the layout model folds that text into a larger box or the figure sits in a
footer.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict

from h3.ontology.boxes import area, h_overlap, inter
from h3.resources.semantic.captions import (
    CAPTION_GAP,
    CAPTION_NUMBER,
    Line,
    caption_segments,
    numbered_caption,
)

STRUCTURAL_KINDS = ("table", "figure", "formula")
CONTEXT_CHARS = 400
# what is embedded: caption first, then near text, content and context, cut at about this many
# word pieces (a table's full markdown would cost a 256-token encoder pass for little gain over
# its caption; encoder time grows with length, and the stage's cost counts against ingestion)
EMBED_TOKENS = 56
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")
_TEXT_KINDS = ("text", "title", "list", "caption", "ocr_text")
_BLOCK_KINDS = (*_TEXT_KINDS, "header", "footer")  # what near text may come from
NEAR_GAP = 48.0  # points: a text block this close to a region describes it
NEAR_BLOCKS = 3  # ... at most this many, nearest first
BESIDE_GAP = 144.0  # points: text on a region's row this close is beside it
FAR_GAP = 96.0  # points: with nothing that close, the single nearest block within this
EDGE_BAND = 0.12  # top/bottom share of the page where running heads and feet (and logos) sit
INSIDE = 0.5  # a block this much inside the region is its own text, not near text
Block = tuple[list[float], str]  # (bbox, text) of a text block on the page


def _gap(region_box, caption_box) -> float:
    """Vertical distance between a region and a caption box (0 when they touch or overlap)."""
    if caption_box[1] >= region_box[3]:
        return caption_box[1] - region_box[3]
    if caption_box[3] <= region_box[1]:
        return region_box[1] - caption_box[3]
    return 0.0


def caption_for(region: dict, page_regions: list[dict], lines: list[Line] | None = None) -> str:
    """The region's caption: the nearest numbered caption among the page's text `lines`, else
    the one the figures stage found, else the nearest caption block among the text regions."""
    if lines and (numbered := numbered_caption(region["bbox"], region["kind"],
                                               caption_segments(lines))):
        return numbered
    extra = json.loads(region.get("extra_json") or "{}")
    if extra.get("caption"):
        return " ".join(str(extra["caption"]).split())
    best, best_gap = "", CAPTION_GAP
    for other in page_regions:
        text = (other.get("text") or "").strip()
        is_caption = other["kind"] == "caption" or bool(CAPTION_NUMBER.match(text))
        if (other is region or not (other["kind"] in _TEXT_KINDS or _fragment(other))
                or not is_caption
                or not h_overlap(region["bbox"], other["bbox"])):
            continue
        gap = _gap(region["bbox"], other["bbox"])
        if gap < best_gap:
            best, best_gap = " ".join(text.split()), gap
    return best


def _in_band(y: float, region_y: float, page_height: float) -> bool:
    """Whether y lies in the same header (or footer) band as region_y."""
    if region_y < EDGE_BAND * page_height:
        return y < EDGE_BAND * page_height
    return y > (1 - EDGE_BAND) * page_height


def near_text(box: list[float], blocks: list[Block], page_height: float) -> str:
    """The text around a region: the NEAR_BLOCKS nearest blocks within NEAR_GAP points of it, or
    beside it on its row within BESIDE_GAP (a logo's tagline); with none, the nearest block
    within FAR_GAP; and for a region in the header/footer band (a logo, a stamp), the running
    head or foot: every block of that band, nearest first."""
    centre = (box[1] + box[3]) / 2
    in_band = centre < EDGE_BAND * page_height or centre > (1 - EDGE_BAND) * page_height
    near: list[tuple[float, str]] = []
    line: list[tuple[float, str]] = []
    for b, text in blocks:
        if not text.strip() or inter(b, box) >= INSIDE * max(area(b), 1e-6):
            continue
        dx = max(b[0] - box[2], box[0] - b[2], 0.0)
        dy = max(b[1] - box[3], box[1] - b[3], 0.0)
        same_row = (min(b[3], box[3]) - max(b[1], box[1])
                    >= 0.5 * min(b[3] - b[1], box[3] - box[1]))
        if in_band and _in_band((b[1] + b[3]) / 2, centre, page_height):
            line.append((dx, text))
        elif same_row and dx <= BESIDE_GAP:
            near.append((min(dx, NEAR_GAP), text))  # beside it counts as near
        elif (dx * dx + dy * dy) ** 0.5 <= FAR_GAP:
            near.append(((dx * dx + dy * dy) ** 0.5, text))
    near.sort(key=lambda dt: dt[0])
    close = [t for d, t in near if d <= NEAR_GAP][:NEAR_BLOCKS] or [t for _, t in near[:1]]
    chosen = [t for _, t in sorted(line, key=lambda dt: dt[0])] + close
    return " ".join(" ".join(chosen).split())[:CONTEXT_CHARS]


def _outermost_captions(captions: dict[int, str], regions: list[dict]) -> dict[int, str]:
    """A caption shared by a figure and a part of it (a drawing cluster inside the model's box)
    belongs to the figure: the part keeps none, so "Figure 4-5" finds the whole."""
    out = dict(captions)
    for i, cap in captions.items():
        box = regions[i]["bbox"]
        for j, other_cap in captions.items():
            outer = regions[j]["bbox"]
            if (j != i and cap and other_cap == cap and area(outer) > area(box)
                    and inter(box, outer) >= 0.9 * area(box)):
                out[i] = ""
                break
    return out


def _fragment(region: dict) -> bool:
    """A text block the layout typed "table" outside every table the tables stage found (a
    caption, a note under the table, a paragraph beside it): the table itself is its own region
    (origin find_tables, layout-model or text-alignment), so this one would only repeat it."""
    return region["kind"] == "table" and region.get("origin") == "pymupdf"


def _page_height(blocks: list[Block], region_boxes: list[list[float]]) -> float:
    return max([b[3] for b, _ in blocks] + [b[3] for b in region_boxes] + [1.0])


def _first_tokens(text: str, budget: int = EMBED_TOKENS) -> str:
    """The leading words of `text` that fit in about `budget` word pieces: ~1.3 a Latin word,
    ~2 a CJK/Hangul character (MiniLM's vocabulary splits Hangul syllables into pieces)."""
    kept, used = [], 0.0
    for word in text.split():
        cjk = len(_CJK.findall(word))
        used += 2 * cjk + (1.3 if len(word) > cjk else 0.0)
        if used > budget and kept:
            break
        kept.append(word)
    return " ".join(kept)


def structure_rows(regions: list[dict], page_blocks: dict[int, list[Block]] | None = None,
                   page_heights: dict[int, float] | None = None,
                   page_lines: dict[int, list[Line]] | None = None) -> list[dict]:
    """One row per table/figure/formula region of one document (vector filled in later from
    `embed_text`, which is not stored). `page_blocks` / `page_lines`: the PDF's own text blocks
    and lines per page (with the text the regions folded into a figure, and captions line by
    line); without them, the text regions stand in."""
    by_page: dict[int, list[dict]] = defaultdict(list)
    for r in regions:
        by_page[int(r["page"])].append(r)
    rows = []
    for page, page_regions in sorted(by_page.items()):
        page_regions.sort(key=lambda r: r["order"])
        blocks = (page_blocks or {}).get(page) or [
            (r["bbox"], r["text"] or "") for r in page_regions if r["kind"] in _BLOCK_KINDS]
        height = (page_heights or {}).get(page) or _page_height(
            blocks, [r["bbox"] for r in page_regions])
        captions = _outermost_captions(
            {i: caption_for(r, page_regions, (page_lines or {}).get(page))
             for i, r in enumerate(page_regions)
             if r["kind"] in STRUCTURAL_KINDS and not _fragment(r)}, page_regions)
        for i, region in enumerate(page_regions):
            if i not in captions:
                continue
            caption = captions[i]
            before = [r["text"] for r in page_regions[max(0, i - 2):i] if r["kind"] in _TEXT_KINDS]
            after = [r["text"] for r in page_regions[i + 1:i + 3] if r["kind"] in _TEXT_KINDS]
            near = near_text(region["bbox"], blocks, height)
            near = " ".join(near.replace(caption, " ").split()) if caption else near
            order = " ".join(" ".join(t for t in before + after if t not in near).split())
            context = f"{near} {order}".strip()[:CONTEXT_CHARS]
            own = " ".join((region.get("text") or "").split())
            extra = json.loads(region.get("extra_json") or "{}")
            inner = " ".join(str(extra.get("inner_text") or "").split())
            body = inner if "inner_text" in extra else own  # a figure's text is its inner text
            if caption and body.startswith(caption):  # said once is enough for the encoder
                body = body[len(caption):].strip()
            number = CAPTION_NUMBER.match(caption)
            rows.append({
                "doc_id": region["doc_id"], "region_id": region["region_id"], "page": page,
                "kind": region["kind"], "bbox": [float(v) for v in region["bbox"]],
                "caption": caption, "context": context,
                "text": caption or body[:300] or f"{region['kind']} on page {page}",
                "search_text": " ".join(x for x in (caption, body[:600], context) if x),
                # near text before the body: for a caption-less figure it is the description
                "embed_text": _first_tokens(" ".join(x for x in (caption, near, body, order)
                                                     if x)),
                "number": number.group(1) if number else "",
            })
    return rows
