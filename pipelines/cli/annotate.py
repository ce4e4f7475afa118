"""What the text output of `h3 recall` and `h3 ask` adds to the hits so that it says what the
JSON says: the notes recall attached to a query, and a "weak match" mark when even the best hit
scores below WEAK_SCORE (the answer is probably not in the store).

WEAK_SCORE comes from real score distributions (pipelines/bench/weak_match.py and its report
pipelines/bench/results/weak_match.json): the best hit's score of labelled queries whose answer
is in the store against off-topic queries, on the docling test PDFs + the sample corpus."""

from __future__ import annotations

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
