"""What the text output of `h3 recall` and `h3 ask` adds to the hits so that it says what the
JSON says: the notes recall attached to a query, a "weak match" mark when even the best hit
scores below WEAK_SCORE (the answer is probably not in the store), and each hit's snippet: the
sentence that matched, not the chunk's first characters.

WEAK_SCORE comes from real score distributions (benchmarks/documents/weak_match.py and its report
benchmarks/documents/results/weak_match.json): the best hit's score of labelled queries whose answer
is in the store against off-topic queries, on the docling test PDFs + the sample corpus."""

from __future__ import annotations

import re

WEAK_SCORE = 0.43  # 3 of 57 answered queries below it, 0 of 20 off-topic at or above


def notes_of(result: dict) -> list[str]:
    """The notes of one recall result (`note`: one string; `notes`: a list), in order."""
    notes = [result["note"]] if result.get("note") else []
    return notes + [n for n in result.get("notes") or [] if n]


def is_weak(hits: list[dict]) -> bool:
    """True when there are hits and the best one scores below WEAK_SCORE."""
    return bool(hits) and max(float(h.get("score") or 0.0) for h in hits) < WEAK_SCORE


def weak_line(hits: list[dict]) -> str | None:
    if not is_weak(hits):
        return None
    best = max(float(h.get("score") or 0.0) for h in hits)
    return (f"  weak match: best score {best:.3f} < {WEAK_SCORE} (the answer may not be in "
            "the store)")


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
