"""Extractive summaries at each scale of a document's tree: a part's key sentences and tables'
titles and line items with their pages (~0.5 KB), a section's from its parts (~1.5 KB), the
document's from its sections (~4 KB at most). Nothing is generated: each line is text of the
document, marked with its page, so the model that reads a summary can cite it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from h3.ontology.sections import Section

PART_CHARS = 480
SECTION_CHARS = 1500
DOCUMENT_CHARS = 4000
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z(])")
_FIGURE = re.compile(r"\d")


def _sentences(text: str) -> list[str]:
    flat = " ".join((text or "").split())
    return [s for s in _SENTENCE.split(flat) if len(s) > 20]


def _table_line(text: str) -> str:
    """A table chunk as its title (context lines above the grid) and its first line items
    (the first cell of the first rows)."""
    lines = (text or "").splitlines()
    title = next((ln.strip() for ln in lines if ln.strip() and not ln.startswith("|")), "")
    items = []
    for ln in lines:
        cells = [c.strip() for c in ln.strip().strip("|").split("|")]
        if ln.startswith("|") and cells and cells[0] and not set(cells[0]) <= set("-: "):
            items.append(cells[0])
        if len(items) == 4:
            break
    return "; ".join(x for x in [title, ", ".join(items)] if x)


def key_line(row: dict) -> str:
    """One chunk's key line: a table's title and line items, else its first sentence with a
    figure (else its first sentence)."""
    if row.get("kind") == "table":
        return _table_line(row.get("text") or "")
    sentences = _sentences(row.get("text") or "")
    if not sentences:
        return " ".join((row.get("text") or "").split())[:160]
    return next((s for s in sentences[:4] if _FIGURE.search(s)), sentences[0])[:200]


def part_summary(rows: Sequence[dict], limit: int = PART_CHARS) -> str:
    """Key lines of a part's chunks with their pages, in reading order, up to `limit` chars."""
    out, used = [], 0
    for row in rows:
        line = key_line(row)
        if not line:
            continue
        piece = f"[p{int(row['page'])}] {line}"
        if used + len(piece) > limit and out:
            break
        out.append(piece[:limit])
        used += len(piece) + 1
    return "\n".join(out)


def section_summary(title: str, parts: Sequence[Section], limit: int = SECTION_CHARS) -> str:
    """A section's title, then each part's first key lines, in turn, up to `limit` chars."""
    lines = [title]
    per_part = [p.summary.splitlines() for p in parts]
    depth, used = 0, len(title)
    while any(depth < len(ls) for ls in per_part):
        for ls in per_part:
            if depth < len(ls):
                if used + len(ls[depth]) > limit:
                    return "\n".join(lines)
                lines.append(ls[depth])
                used += len(ls[depth]) + 1
        depth += 1
    return "\n".join(lines)


def document_summary_text(sections: Sequence[Section], limit: int = DOCUMENT_CHARS) -> str:
    """Every top section's title and pages, then its first key line while room is left: the
    document's outline read at a glance (`h3 outline`, the top of navigation)."""
    heads = [f"{s.title} (p{s.pages})" for s in sections]
    budget = max(limit - sum(len(h) + 1 for h in heads), 0) // max(len(sections), 1)
    out = []
    for head, s in zip(heads, sections, strict=True):
        first = next(iter(s.summary.splitlines()[1:2]), "")
        out.append(f"{head}: {first[:budget]}" if budget > 20 and first else head)
    return "\n".join(out)[:limit]
