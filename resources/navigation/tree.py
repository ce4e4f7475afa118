"""A document's section tree, from its PDF outline or from the headings its chunks open with.

Top-level sections (level 1) come, in order of preference, from
1. the PDF outline (bookmarks, `get_toc()`), its two upper levels, when it has at least
   MIN_SECTIONS entries;
2. the structural headings chunks open with: "Item 7.", "Note 12", a financial statement's
   title, which every annual or quarterly report has whatever its filer; else the chunking
   stage's own `section` names (a title region started the chunk);
3. page windows, when neither gives MIN_SECTIONS sections.
Each top section is then cut into parts (level 2) of at most PART_TOKENS tokens of consecutive
chunks, cut at a page break where one falls in the second half of the part: a part is what a
question loads, so a 500-page filing loads as few tokens as a 20-page one.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from h3.ontology.sections import Section
from h3.resources.navigation.summaries import part_summary, section_summary
from h3.resources.recall.statements import STATEMENTS

MIN_SECTIONS = 3
# Tokens of one part: five parts (the default branch) are ~6K tokens at most, their best ~4K
# loaded (navigation.branch_tokens): ~4% of a 100-page filing's KV.
PART_TOKENS = 1200
# A top section smaller than this merges into the one before it (a table of contents lists
# every Item on one page: each would otherwise be a section of a few tokens).
MIN_SECTION_TOKENS = 150
PAGE_WINDOW = 8  # pages per top section when the document has no headings
_STRUCTURAL = re.compile(r"^\s*((?:ITEM|Item)\s+\d{1,2}[A-Ca-c]?\b[.:]?|(?:NOTE|Note)\s+\d{1,2}\b"
                         r"[.:]?)\s*(\S.*)?$")
# a heading on a later line of a chunk: "Item 7A. Quantitative ...", "NOTE 3. Acquisitions"
# (a period and a capitalised title: "see Note 5 for details" is prose)
_STRUCTURAL_LINE = re.compile(r"^\s*(?:ITEM|Item|NOTE|Note)\s+\d{1,2}[A-Ca-c]?\.\s+[A-Z]")
_TITLE_CHARS = 90
_STATEMENT_TITLE_CHARS = 70  # a longer first line naming a statement is prose


def chunk_order(chunk_id: str) -> int:
    tail = chunk_id.rsplit(":c", 1)[-1]
    return int(tail) if tail.isdigit() else 0


def _first_line(text: str) -> str:
    return " ".join((text or "").strip().split("\n", 1)[0].split())


def structural_heading(row: dict) -> str | None:
    """The heading a chunk opens with ("Item 7. Management's Discussion ...", "Note 6. ...",
    "Consolidated Statements of Cash Flows"), or None. Table chunks repeat their section as
    context and are skipped."""
    if row.get("kind") == "table":
        return None
    line = _first_line(row.get("text") or "")
    m = _STRUCTURAL.match(line)
    if m:
        return line[:_TITLE_CHARS]
    for later in (row.get("text") or "").splitlines()[1:]:
        if _STRUCTURAL_LINE.match(later):
            return " ".join(later.split())[:_TITLE_CHARS]
    squashed = re.sub(r"\s+", "", line.lower())
    if len(line) <= _STATEMENT_TITLE_CHARS and any(t.search(squashed)
                                                    for t, _, _ in STATEMENTS.values()):
        return line
    return None


def _section_name_heading(row: dict, previous: str) -> str | None:
    name = " ".join((row.get("section") or "").split())
    if name and name != previous and not name.isdigit() and len(name) > 3:
        return name[:_TITLE_CHARS]
    return None


def headings(rows: Sequence[dict]) -> tuple[list[tuple[int, str]], str]:
    """(chunk index, title) of each top-level section start, and the origin."""
    found = [(i, h) for i, r in enumerate(rows) if (h := structural_heading(r))]
    if len(found) < MIN_SECTIONS:
        found, previous = [], ""
        for i, r in enumerate(rows):
            h = _section_name_heading(r, previous)
            if h:
                found.append((i, h))
                previous = " ".join((r.get("section") or "").split())
    if len(found) < MIN_SECTIONS:
        pages = sorted({int(r["page"]) for r in rows})
        starts = {p for p in pages[::PAGE_WINDOW]}
        found, seen = [], set()
        for i, r in enumerate(rows):
            p = int(r["page"])
            if p in starts and p not in seen:
                seen.add(p)
                found.append((i, f"pages {p}-{min(p + PAGE_WINDOW - 1, pages[-1])}"))
        return found, "pages"
    return found, "headings"


def outline_starts(rows: Sequence[dict], toc: Sequence[Sequence]) -> list[tuple[int, str]]:
    """(chunk index, title) of each outline entry of levels 1-2: the first chunk on its page."""
    first_on_page: dict[int, int] = {}
    for i, r in enumerate(rows):
        first_on_page.setdefault(int(r["page"]), i)
    pages = sorted(first_on_page)
    out: list[tuple[int, str]] = []
    for entry in toc:
        level, title, page = int(entry[0]), str(entry[1]), int(entry[2])
        if level > 2 or page < 1:
            continue
        later = [p for p in pages if p >= page]
        if not later:
            continue
        index = first_on_page[later[0]]
        title = " ".join(title.split())[:_TITLE_CHARS]
        if out and out[-1][0] == index:  # two entries on one page: one section, both names
            out[-1] = (index, f"{out[-1][1]} / {title}"[:_TITLE_CHARS])
        elif not out or index > out[-1][0]:
            out.append((index, title))
    return out


def read_outline(path: str | Path) -> list[list]:
    """The PDF's outline ([level, title, page] rows; [] when it has none or cannot be read)."""
    try:
        import pymupdf

        with pymupdf.open(str(path)) as doc:
            return [list(e[:3]) for e in doc.get_toc()]
    except Exception:  # noqa: BLE001 - no outline is the common case: headings are used then
        return []


def _merge_small(starts: list[tuple[int, str]], rows: Sequence[dict]) -> list[tuple[int, str]]:
    """Top sections of fewer than MIN_SECTION_TOKENS tokens merge into the one before them
    (the first one into the one after it)."""
    if not starts:
        return [(0, "document")]
    if starts[0][0] != 0:
        starts = [(0, "front matter"), *starts]
    tokens = [int(r.get("token_count") or 0) for r in rows]
    bounds = [s for s, _ in starts] + [len(rows)]
    kept: list[tuple[int, str]] = []
    for (start, title), end in zip(starts, bounds[1:], strict=True):
        if kept and sum(tokens[start:end]) < MIN_SECTION_TOKENS:
            continue
        kept.append((start, title))
    return kept


def _parts(rows: Sequence[dict], start: int, end: int) -> list[tuple[int, int]]:
    """[a, b) chunk ranges of at most PART_TOKENS tokens (one chunk may exceed it alone), cut at
    the last page break of the second half when there is one."""
    out, a = [], start
    while a < end:
        total, b, cut = 0, a, None
        while b < end and (b == a or total + int(rows[b].get("token_count") or 0) <= PART_TOKENS):
            if b > a and rows[b]["page"] != rows[b - 1]["page"] and total >= PART_TOKENS // 2:
                cut = b
            total += int(rows[b].get("token_count") or 0)
            b += 1
        if b < end and cut is not None:
            b = cut
        out.append((a, b))
        a = b
    return out


def _centroid(vectors: np.ndarray) -> tuple[float, ...]:
    if vectors.size == 0:
        return ()
    mean = vectors.mean(axis=0)  # (384,)
    norm = float(np.linalg.norm(mean))
    return tuple(float(x) for x in (mean / norm if norm else mean))


def build_tree(doc_id: str, rows: Sequence[dict], toc: Sequence[Sequence] = ()
               ) -> list[Section]:
    """The document's sections and parts (top sections in reading order, each followed by its
    parts) from its chunk rows (chunk_id, page, text, kind, section, token_count, vector) and
    its PDF outline. Raises ValueError when the document has no chunks."""
    if not rows:
        raise ValueError(f"document {doc_id}: no chunks to build sections from")
    rows = sorted(rows, key=lambda r: chunk_order(r["chunk_id"]))
    starts = outline_starts(rows, toc) if toc else []
    origin = "outline"
    if len(starts) < MIN_SECTIONS:
        starts, origin = headings(rows)
    starts = _merge_small(starts, rows)
    vectors = np.asarray([r["vector"] for r in rows if r.get("vector") is not None], np.float32)
    has_vectors = len(vectors) == len(rows)
    bounds = [s for s, _ in starts] + [len(rows)]
    tree: list[Section] = []
    for n, ((start, title), end) in enumerate(zip(starts, bounds[1:], strict=True), 1):
        sid = f"s{n}"
        parts = []
        for m, (a, b) in enumerate(_parts(rows, start, end), 1):
            chunk = rows[a:b]
            parts.append(Section(
                doc_id=doc_id, section_id=f"{sid}.{m}", level=2, parent_id=sid,
                title=f"{title} ({m})" if m > 1 else title,
                page_start=int(chunk[0]["page"]), page_end=max(int(r["page"]) for r in chunk),
                chunk_ids=tuple(r["chunk_id"] for r in chunk),
                tokens=sum(int(r.get("token_count") or 0) for r in chunk), origin=origin,
                summary=part_summary(chunk),
                vector=_centroid(vectors[a:b]) if has_vectors else ()))
        chunk = rows[start:end]
        tree.append(Section(
            doc_id=doc_id, section_id=sid, level=1, title=title,
            page_start=int(chunk[0]["page"]), page_end=max(int(r["page"]) for r in chunk),
            chunk_ids=tuple(r["chunk_id"] for r in chunk),
            tokens=sum(p.tokens for p in parts), origin=origin,
            summary=section_summary(title, parts),
            vector=_centroid(vectors[start:end]) if has_vectors else ()))
        tree += parts
    return tree


def top_sections(tree: Sequence[Section]) -> list[Section]:
    return [s for s in tree if s.level == 1]


def parts_of(tree: Sequence[Section]) -> list[Section]:
    return [s for s in tree if s.level == 2]
