"""Structure rows: each table, figure and formula region with its caption and the text around
it, which is what a reader (and structural recall) identifies it by."""

from __future__ import annotations

import json
import re
from collections import defaultdict

STRUCTURAL_KINDS = ("table", "figure", "formula")
CAPTION_GAP = 72.0  # points: a caption is at most an inch from its table or figure
CONTEXT_CHARS = 400
# what is embedded: caption first, then content, then context, cut at this many words (a
# table's full markdown would cost a 256-token encoder pass for little gain over its caption)
EMBED_WORDS = 64
_CAPTION_NUMBER = re.compile(r"^\s*(?:table|tab\.|figure|fig\.?|chart|equation|eq\.|example|"
                             r"listing|exhibit|表|图)\s*(\d+(?:[.-]\d+)*)", re.IGNORECASE)
_TEXT_KINDS = ("text", "title", "list", "caption", "ocr_text")


def _h_overlap(a, b) -> bool:
    return min(a[2], b[2]) > max(a[0], b[0])


def _gap(region_box, caption_box) -> float:
    """Vertical distance between a region and a caption box (0 when they touch or overlap)."""
    if caption_box[1] >= region_box[3]:
        return caption_box[1] - region_box[3]
    if caption_box[3] <= region_box[1]:
        return region_box[1] - caption_box[3]
    return 0.0


def caption_for(region: dict, page_regions: list[dict]) -> str:
    """The region's own caption (figures carry it) or the nearest caption block on the page."""
    extra = json.loads(region.get("extra_json") or "{}")
    if extra.get("caption"):
        return " ".join(str(extra["caption"]).split())
    best, best_gap = "", CAPTION_GAP
    for other in page_regions:
        text = (other.get("text") or "").strip()
        is_caption = other["kind"] == "caption" or bool(_CAPTION_NUMBER.match(text))
        if other is region or not is_caption or not _h_overlap(region["bbox"], other["bbox"]):
            continue
        gap = _gap(region["bbox"], other["bbox"])
        if gap < best_gap:
            best, best_gap = " ".join(text.split()), gap
    return best


def _first_words(text: str, n: int = EMBED_WORDS) -> str:
    return " ".join(text.split()[:n])


def structure_rows(regions: list[dict]) -> list[dict]:
    """One row per table/figure/formula region of one document (vector filled in later from
    `embed_text`, which is not stored)."""
    by_page: dict[int, list[dict]] = defaultdict(list)
    for r in regions:
        by_page[int(r["page"])].append(r)
    rows = []
    for page, page_regions in sorted(by_page.items()):
        page_regions.sort(key=lambda r: r["order"])
        for i, region in enumerate(page_regions):
            if region["kind"] not in STRUCTURAL_KINDS:
                continue
            caption = caption_for(region, page_regions)
            before = [r["text"] for r in page_regions[max(0, i - 2):i] if r["kind"] in _TEXT_KINDS]
            after = [r["text"] for r in page_regions[i + 1:i + 3] if r["kind"] in _TEXT_KINDS]
            context = " ".join(" ".join(before + after).split())[:CONTEXT_CHARS]
            own = " ".join((region.get("text") or "").split())
            extra = json.loads(region.get("extra_json") or "{}")
            inner = " ".join(str(extra.get("inner_text") or "").split())
            body = own if own != caption else inner
            number = _CAPTION_NUMBER.match(caption)
            rows.append({
                "doc_id": region["doc_id"], "region_id": region["region_id"], "page": page,
                "kind": region["kind"], "bbox": [float(v) for v in region["bbox"]],
                "caption": caption, "context": context,
                "text": caption or body[:300] or f"{region['kind']} on page {page}",
                "search_text": " ".join(x for x in (caption, body[:600], context) if x),
                "embed_text": _first_words(" ".join(x for x in (caption, body, context) if x)),
                "number": number.group(1) if number else "",
            })
    return rows
