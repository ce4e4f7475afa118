"""Pure functions behind the `chunks` stage: merge the stages' outputs into one region list per
page (in reading order), then cut section-aware chunks of about `max_tokens` tokens."""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import replace

from h3.ontology.records import (
    ChunkRecord,
    FiguresRecord,
    LayoutRecord,
    OcrRecord,
    RegionRecord,
    TablesRecord,
)

SKIP_IN_CHUNKS = ("header", "footer")  # running heads and page numbers only add noise
# A "header" whose text (digits aside) is on this many pages, or on every page, is a running
# head; on fewer it is the page's own heading, which the layout model also calls "header" when
# it sits at the top of a page (a 10-K's "CONSOLIDATED STATEMENTS OF CASH FLOWS", "Item 1A. Risk
# Factors": 24 of the 28 distinct header texts of one development 10-K, all left out of chunks)
RUNNING_HEAD_PAGES = 3
HEADING_MAX_WORDS = 12
_SENTENCE = re.compile(r"(?<=[.!?;:])\s+")


def _inside(inner: Sequence[float], outer: Sequence[float], share: float = 0.5) -> bool:
    w = min(inner[2], outer[2]) - max(inner[0], outer[0])
    h = min(inner[3], outer[3]) - max(inner[1], outer[1])
    area = max((inner[2] - inner[0]) * (inner[3] - inner[1]), 1e-6)
    return w > 0 and h > 0 and w * h / area >= share


def _union(boxes: list[Sequence[float]]) -> tuple[float, ...]:
    return (min(b[0] for b in boxes), min(b[1] for b in boxes),
            max(b[2] for b in boxes), max(b[3] for b in boxes))


def build_regions(doc_id: str, layout: LayoutRecord, tables: TablesRecord,
                  figures: FiguresRecord, ocr: OcrRecord) -> list[RegionRecord]:
    """Rows for the `regions` table, per page in reading order. Text blocks that lie inside a
    table or figure are folded into that region (its text is the table's cells / the caption);
    a text block typed "figure" that no figure holds is text (the figures stage decides what a
    figure is)."""
    # the regions being placed, as dicts: "_order" is set while the page is ordered
    by_page: dict[int, list[dict]] = {}
    for t in tables.tables:
        by_page.setdefault(t.page, []).append(
            {"kind": "table", "bbox": t.bbox, "text": t.markdown, "origin": t.origin,
             "extra_json": json.dumps({"rows": t.rows}, ensure_ascii=False)})
    for f in figures.figures:
        by_page.setdefault(f.page, []).append(
            {"kind": "figure", "bbox": f.bbox, "text": f.caption or f.text,
             "origin": f.origin, "image_path": f.image_path,
             "extra_json": json.dumps({"caption": f.caption, "inner_text": f.text})})
    for p in ocr.ocr_pages:
        by_page.setdefault(p.page, []).extend(
            {"kind": "ocr_text", "bbox": q.bbox, "text": q.text, "origin": "tesseract"}
            for q in p.paragraphs)
    rows: list[RegionRecord] = []
    for page in layout.layout:
        number = page.page
        specials = [r for r in by_page.get(number, []) if r["kind"] in ("table", "figure")]
        captions = {" ".join(s["text"].split()) for s in specials if s["kind"] == "figure"}
        ordered: list[tuple[float, dict]] = []
        for i, b in enumerate(page.blocks):
            text = b.text or ""
            if " ".join(text.split()) in captions:
                continue  # the figure region carries its caption
            host = next((s for s in specials if _inside(b.bbox, s["bbox"])), None)
            if host is not None and b.type != "caption":
                host.setdefault("_order", float(i))
                continue
            # a block the layout model typed "figure" that no figure of the figures stage holds
            # (it rejected the model's box as text only, _figure_boxes._text_only) is text
            kind = "text" if b.type == "figure" else b.type
            ordered.append((float(i), {"kind": kind, "bbox": b.bbox, "text": text,
                                       "origin": "pymupdf"}))
        for s in specials:  # not anchored by a swallowed block: place by vertical position
            if "_order" not in s:
                after = [o for o, r in ordered if r["bbox"][1] < s["bbox"][1]]
                s["_order"] = (max(after) if after else -1.0) + 0.5
            ordered.append((s.pop("_order"), s))
        extra = [r for r in by_page.get(number, []) if r["kind"] == "ocr_text"]
        ordered += [(1e6 + i, r) for i, r in enumerate(extra)]
        ordered.sort(key=lambda item: item[0])
        for order, (_, r) in enumerate(ordered):
            rows.append(RegionRecord(
                doc_id=doc_id, region_id=f"{doc_id}:p{number}:r{order}", page=number,
                kind=r["kind"], bbox=tuple(float(v) for v in r["bbox"]), text=r["text"] or "",
                order=order, origin=r["origin"], image_path=r.get("image_path"),
                extra_json=r.get("extra_json")))
    return rows


def _split_long(text: str, count: Callable[[str], int], max_tokens: int) -> list[str]:
    """Sentence-packed pieces of at most ~max_tokens (a sentence up to 1.5x stays whole; a longer
    one is cut by words: _split_words). A piece's size is the running sum of its sentences'
    counts (see build_chunks)."""
    pieces, current, current_tokens = [], "", 0
    for sentence in _SENTENCE.split(text):
        tokens = count(sentence)
        if tokens > max_tokens * 1.5:
            if current:
                pieces.append(current)
            pieces += _split_words(sentence, count, max_tokens)
            current, current_tokens = "", 0
            continue
        if current and current_tokens + tokens > max_tokens:
            pieces.append(current)
            current, current_tokens = "", 0
        current, current_tokens = f"{current} {sentence}".strip(), current_tokens + tokens
    if current:
        pieces.append(current)
    return pieces


def _split_words(text: str, count: Callable[[str], int], max_tokens: int) -> list[str]:
    """Word-packed pieces of at most max_tokens. Text without sentence ends (OCR output, lists,
    code) is cut here; a single word over the budget (a base64 blob, a long URL) is cut into
    runs of characters, so that no chunk is larger than what the embedder reads."""
    pieces, current, current_tokens = [], [], 0
    for word in text.split():
        tokens = count(word)
        if current and current_tokens + tokens > max_tokens:
            pieces.append(" ".join(current))
            current, current_tokens = [], 0
        if tokens > max_tokens:
            step = max(1, len(word) * max_tokens // tokens)  # characters per max_tokens
            pieces += [word[i:i + step] for i in range(0, len(word), step)]
            continue
        current.append(word)
        current_tokens += tokens
    if current:
        pieces.append(" ".join(current))
    return pieces


def _head_key(text: str) -> str:
    """A header's text as repeated from page to page: case, spacing and numbers aside."""
    return re.sub(r"\d+", "#", " ".join(text.split()).lower())


_NUMBER = re.compile(r"[$(]?[\d.,%)]+")


def heading_like(text: str) -> bool:
    """A short line that reads as a heading ("Item 7. Management's Discussion", "5. Balance
    Sheet Components"), not a label, a sentence or a row of figures ("(in thousands)", "Other
    data:", "None.", "Years ended December 31, 2022 2021 2020")."""
    words = text.split()
    return (0 < len(words) <= HEADING_MAX_WORDS and (words[0][0].isupper() or words[0][0].isdigit())
            and not text.rstrip().endswith((".", ":", ",", ";"))
            and sum(bool(_NUMBER.fullmatch(w)) for w in words) <= 1)


def _is_grid(text: str) -> bool:
    """Whether a table region's text is a table (the tables stage writes markdown rows)."""
    return any(line.lstrip().startswith("|") for line in text.splitlines())


def page_headings(regions: list[RegionRecord]) -> dict[str, str]:
    """region_id -> the kind ("title" or "text") each "header" region that is not a running head
    is chunked as (module constants): its page's heading, kept in the chunks and naming the
    section, where a running head ("Table of Contents", the company name, page numbers) is
    left out. A one-page document's headers stay headers (nothing to compare them with)."""
    heads = [r for r in regions if r.kind == "header" and r.text.strip()]
    pages_of: dict[str, set[int]] = defaultdict(set)
    for r in heads:
        pages_of[_head_key(r.text)].add(r.page)
    n_pages = len({r.page for r in regions})
    kinds = {}
    for r in heads:
        on = len(pages_of[_head_key(r.text)])
        if on < RUNNING_HEAD_PAGES and on < n_pages:
            kinds[r.region_id] = "title" if heading_like(r.text.strip()) else "text"
    return kinds


def build_chunks(doc_id: str, regions: list[RegionRecord], count: Callable[[str], int],
                 max_tokens: int = 256) -> list[ChunkRecord]:
    """Section-aware chunks: a title starts a new chunk and names the section; tables and figures
    are chunks of their own; a chunk never crosses a page, so its page and bbox are exact.
    Running heads and footers are left out; a page's own heading labelled "header" is kept
    (`page_headings`), and a "table" region with no grid is text (or a heading).

    `count` must be (about) additive over whitespace joins, as word-piece and word counts are:
    a growing chunk's size is the running sum of its parts' counts, not a re-count of its text
    (re-counting made chunking quadratic in the tokenizer calls)."""
    chunks: list[ChunkRecord] = []
    buf: list[RegionRecord] = []
    buf_tokens = 0
    section = ""

    def emit(text: str, parts: list[RegionRecord], kind: str) -> None:
        chunks.append(ChunkRecord(
            doc_id=doc_id, chunk_id=f"{doc_id}:c{len(chunks)}", page=parts[0].page,
            bbox=_union([p.bbox for p in parts]), text=text, section=section, kind=kind,
            token_count=count(text), region_ids=tuple(p.region_id for p in parts)))

    def flush() -> None:
        nonlocal buf_tokens
        buf_tokens = 0
        if buf:
            kinds = {r.kind for r in buf} - {"title"}
            kind = kinds.pop() if len(kinds) == 1 else ("title" if not kinds else "text")
            emit("\n".join(r.text for r in buf), list(buf), kind)
            buf.clear()

    last_page = None
    above: list[RegionRecord] = []  # this page's text regions so far: a table's title, heads
    headings = page_headings(regions)
    for region in regions:
        if region.region_id in headings:
            region = replace(region, kind=headings[region.region_id])
        text = region.text.strip()
        if region.kind == "table" and not _is_grid(text):
            # a text block the layout model's table box covered but no grid took in: a
            # statement's title, its column periods, a note under it (269 of the 903 table
            # regions of the nine FinanceBench 10-Ks), each of which was a "table" chunk alone
            region = replace(region, kind="title" if heading_like(text) else "text")
        if region.page != last_page:
            flush()
            last_page = region.page
            above = []
        if not text or region.kind in SKIP_IN_CHUNKS:
            continue
        if region.kind == "table":
            flush()
            head = table_context(region, above, section)
            for piece in _split_rows(compact_table(text), count, max_tokens, head):
                emit(piece, [region], "table")
            continue
        if region.kind in ("text", "title", "caption"):
            above.append(region)
        tokens = count(text)
        if region.kind == "title":
            if any(r.kind != "title" for r in buf):
                flush()
            section = " ".join(text.split())[:200]
            buf.append(region)
            buf_tokens += tokens
        elif region.kind == "figure" or tokens > max_tokens:
            flush()
            kind = region.kind if region.kind != "title" else "text"
            for piece in _split_long(text, count, max_tokens):
                emit(piece, [region], kind)
        else:
            if buf and buf_tokens + tokens > max_tokens:
                flush()
            buf.append(region)
            buf_tokens += tokens
    flush()
    return chunks


def table_context(table: RegionRecord, above: list[RegionRecord], section: str,
                  max_gap: float = 72.0, max_chars: int = 240) -> list[str]:
    """What a table's rows need to be found: its section heading, and the short text regions
    right above it on the page (the table's title or caption, "(Dollars in millions)", the
    column periods "Years ended December 31, 2022 2021 2020": statements often set those
    outside the grid). A region counts while it is short and the gap to the next one below
    is under `max_gap` points."""
    lines: list[str] = []
    top = table.bbox[1]
    for r in reversed(above):
        text = " ".join(r.text.split())
        # it starts above the table (column heads may reach into the grid's box) and is close
        if r.bbox[1] >= top - 1 or top - r.bbox[3] > max_gap or len(text) > max_chars:
            break
        lines.insert(0, text)
        top = r.bbox[1]
        if len(lines) == 3:
            break
    if section and all(section not in ln for ln in lines):
        lines.insert(0, section)
    return lines


_EMPTY_CELL = frozenset({"", "$", "%", "€", "£"})


def compact_table(markdown: str) -> str:
    """The table's markdown without columns that hold nothing but blanks or currency signs
    (statements set "$" in a column of its own): fewer tokens, more rows per chunk."""
    lines = markdown.splitlines()
    rows = [[c.strip() for c in ln.strip().strip("|").split("|")] for ln in lines]
    if len(rows) < 3 or not all(ln.lstrip().startswith("|") for ln in lines):
        return markdown
    body = [r for i, r in enumerate(rows) if i != 1]  # row 1 is the |---| line
    width = max(len(r) for r in body)
    keep = [j for j in range(width) if any(j < len(r) and r[j] not in _EMPTY_CELL for r in body)]
    if not keep or len(keep) == width:
        return markdown
    out = ["| " + " | ".join(r[j] if j < len(r) else "" for j in keep) + " |" for r in body]
    out.insert(1, "|" + "---|" * len(keep))
    return "\n".join(out)


def _split_rows(markdown: str, count: Callable[[str], int], max_tokens: int,
                context: list[str] | None = None) -> list[str]:
    """Table pieces of whole rows, each repeating the context lines (title, section) and the
    header rows."""
    lines = markdown.splitlines()
    head, body = list(context or []) + lines[:2], lines[2:]
    head_tokens = sum(count(line) for line in head)
    pieces, current, current_tokens = [], list(head), head_tokens
    for line in body:
        tokens = count(line)
        if len(current) > len(head) and current_tokens + tokens > max_tokens:
            pieces.append("\n".join(current))
            current, current_tokens = list(head), head_tokens
        current.append(line)
        current_tokens += tokens
    pieces.append("\n".join(current))
    return pieces
