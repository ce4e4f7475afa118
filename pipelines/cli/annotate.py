"""What the text output of `h3 recall` and `h3 ask` adds to the hits so that it says what the
JSON says: the notes recall attached to a query, a "weak match" mark when even the best hit
scores below WEAK_SCORE (the answer is probably not in the store), and each hit's snippet: the
sentence that matched, not the chunk's first characters.

WEAK_SCORE comes from real score distributions (benchmarks/documents/weak_match.py and its report
benchmarks/results/): the best hit's score of labelled queries whose answer
is in the store against off-topic queries, on the docling test PDFs + the sample corpus."""

from __future__ import annotations

import re

from h3.resources.answers.ask import WEAK_SCORE, notes_of, weak_match

__all__ = ["WEAK_SCORE", "is_weak", "notes_of", "snippet", "table_lines", "weak_line"]


def is_weak(hits: list[dict]) -> bool:
    """True when there are hits and the best one scores below WEAK_SCORE."""
    return weak_match(hits) is not None


def weak_line(hits: list[dict]) -> str | None:
    """The weak-match mark as `h3 recall` prints it under a query (`h3 ask` refuses with it)."""
    reason = weak_match(hits)
    return f"  {reason}" if reason else None


SNIPPET_WIDTH = 110
_SENTENCE_END = re.compile(r"(?<=[.!?;])\s+(?=[A-Z0-9(\"“$])|\s+\|\s+(?=\S)")


def snippet(text: str, query: str, width: int = SNIPPET_WIDTH) -> str:
    """The part of a hit's text a person should read: the sentence (or table cell run) sharing
    the most content words with the query, cut to `width` around where they are, with "…"
    where text was left out. A chunk's first characters are often a heading or a table's
    header row, not what matched."""
    from h3.resources.recall.text import stems

    flat = " ".join(text.split())
    if len(flat) <= width:
        return flat
    wanted = stems(query)
    starts = [0] + [m.end() for m in _SENTENCE_END.finditer(flat)]
    spans = [(a, b) for a, b in zip(starts, starts[1:] + [len(flat)], strict=True) if b > a]
    best = max(spans, key=lambda ab: (len(wanted & stems(flat[ab[0]:ab[1]])), -ab[0]))
    if not wanted & stems(flat[best[0]:best[1]]):
        best = spans[0]  # nothing matches a word: the opening, as before
    a, b = best
    if b - a > width:  # a long sentence: centre the window on its first query word
        hit = next((m.start() for m in re.finditer(r"\w+", flat[a:b])
                    if stems(m.group(0)) & wanted), 0)
        a = a + max(0, hit - width // 3)
        b = min(b, a + width)
    else:  # a short one: widen it with its neighbours' words
        pad = (width - (b - a)) // 2
        a, b = max(0, a - pad), min(len(flat), b + pad)
    return ("…" if a > 0 else "") + flat[a:b].strip() + ("…" if b < len(flat) else "")


TABLE_ROWS = 8  # body rows of a table hit the text output shows
TABLE_CELL = 28  # characters of one cell
_RULE = re.compile(r":?-{2,}:?")
_NUMBER = re.compile(r"[-+−–(]?[$€£]?\s?[\d.,]+\s?%?\)?")


def table_lines(text: str, query: str, rows: int = TABLE_ROWS,
                cell: int = TABLE_CELL) -> list[str] | None:
    """A table hit as a person reads it: the lines before its table (title, caption), then the
    table's rows on lines of their own, columns padded to one width (numbers right-aligned),
    the header underlined, columns that are blank in every row left out. With more than `rows`
    body rows, those sharing the most words with the query, in table order, and a line saying
    how many were left out. None when the text holds no markdown table (`| a | b |` lines)."""
    from h3.resources.recall.text import stems

    lines = [row for ln in text.splitlines() if ln.strip() for row in _unflatten(ln.strip())]
    start = next((i for i, ln in enumerate(lines) if ln.startswith("|")), None)
    if start is None:
        return None
    end = next((i for i in range(start, len(lines)) if not lines[i].startswith("|")), len(lines))
    if end - start < 2:
        return None
    grid = [[c.strip() for c in ln.strip("|").split("|")] for ln in lines[start:end]]
    rule = next((i for i, r in enumerate(grid) if all(_RULE.fullmatch(c) or not c for c in r)
                 and any(c for c in r)), None)
    header = grid[:rule] if rule is not None else []
    body = grid[rule + 1:] if rule is not None else grid
    width = max(len(r) for r in grid)
    keep = [j for j in range(width) if any(j < len(r) and r[j] for r in header + body)]
    if not keep:
        return None
    left_out = 0
    if len(body) > rows:
        wanted = stems(query)
        ranked = sorted(range(len(body)),
                        key=lambda i: (-len(wanted & stems(" ".join(body[i]))), i))
        picked = sorted(ranked[:rows])
        left_out = len(body) - rows
        body = [body[i] for i in picked]

    def cells(row: list[str]) -> list[str]:
        out = [row[j] if j < len(row) else "" for j in keep]
        return [c if len(c) <= cell else c[:cell - 1] + "…" for c in out]

    shown_header, shown_body = [cells(r) for r in header], [cells(r) for r in body]
    widths = [max(len(r[k]) for r in shown_header + shown_body) for k in range(len(keep))]
    filled = [[r[k] for r in shown_body if r[k]] for k in range(len(keep))]
    numeric = [bool(f) and 2 * sum(bool(_NUMBER.fullmatch(c)) for c in f) >= len(f)
               for f in filled]  # a column of numbers: right-aligned, its header too

    def line(row: list[str]) -> str:
        return "  ".join(c.rjust(w) if right else c.ljust(w)
                         for c, w, right in zip(row, widths, numeric, strict=True)).rstrip()

    out = [" ".join(ln.split()) for ln in lines[:start]]
    out += [line(r) for r in shown_header]
    if shown_header:
        out.append("  ".join("-" * w for w in widths))
    out += [line(r) for r in shown_body]
    if left_out:
        out.append(f"… {left_out} more rows")
    out += [" ".join(ln.split()) for ln in lines[end:]]
    return out


def _unflatten(line: str) -> list[str]:
    """A markdown table written on one line (structure recall stores a table's text with its
    line breaks turned to spaces: `| a | b | |---|---| | 1 | 2 |`) back as one line a row; any
    other line as it is. The rule row gives the column count n; rows are then n cells each, one
    empty cell (the `| |` between two rows) apart."""
    if not line.startswith("|"):
        return [line]
    cells = [c.strip() for c in line.strip().strip("|").split("|")]
    first = next((i for i, c in enumerate(cells) if _RULE.fullmatch(c)), None)
    if first is None or first == 0 or cells[first - 1] != "":
        return [line]  # no rule row inside the line: a row of its own, or not a table
    n = first - 1  # the header's cells come before the empty boundary cell
    if n < 1 or any(not _RULE.fullmatch(c) for c in cells[first:first + n]):
        return [line]
    rows = [cells[i:i + n] for i in range(0, len(cells), n + 1)]
    if any(len(r) != n for r in rows):
        return [line]
    return ["| " + " | ".join(r) + " |" for r in rows]
