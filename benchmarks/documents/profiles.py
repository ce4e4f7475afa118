"""`h3 bench --scenario profiles`: document profiles (issue 35) against the development set's truth.

Every PDF of the financebench-dev corpus (`pdfs/` and `unlabelled/`; `--quick`: `unlabelled/`
only) is profiled with `profile_pdf`, the function ingestion's profile follows, and compared
with `profiles.jsonl`:
- issuer: the legal name, compared case-insensitively without punctuation and with one legal
  suffix spelling for another ("Inc" = "Inc." = "Incorporated"); a different name ("Square,
  Inc." for "Block, Inc."), or a missing suffix or "The", is a miss;
- form: 10-K, 10-Q, 8-K or "earnings release";
- fiscal period, over files whose truth has one: our "Q2 2023" is the truth's "FY2023 Q2";
- dated (an 8-K's date, ISO), over files whose truth has one.
Each field is reported for the tune and the check half of `benchmarks/documents/split.py` (rules are
tuned on the first; the second is the honest figure) and overall, with the list of misses.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from pathlib import Path

from benchmarks.documents.filings import corpus_dir
from benchmarks.documents.split import HALVES, half_of, halves

FIELDS = ("issuer", "form", "fiscal_period", "dated")
# one spelling per legal suffix, so that "Corp." and "Corporation" compare equal
_SUFFIX_SPELLING = {"incorporated": "inc", "corporation": "corp", "company": "co",
                    "limited": "ltd"}


def norm_issuer(name: str | None) -> str:
    words = re.sub(r"[^\w&\s]", " ", (name or "").lower()).split()
    if words and words[-1] in _SUFFIX_SPELLING:
        words[-1] = _SUFFIX_SPELLING[words[-1]]
    return " ".join(words)


def norm_period(period: str | None) -> str:
    """'Q2 2023' (ours) and 'FY2023 Q2' (the truth's) -> 'FY2023 Q2'; 'FY2022' stays."""
    period = " ".join((period or "").split())
    if m := re.fullmatch(r"Q([1-4]) (\d{4})", period):
        return f"FY{m.group(2)} Q{m.group(1)}"
    return period


def _got(profile) -> dict:
    return {"issuer": profile.issuer, "form": profile.form_type,
            "fiscal_period": profile.fiscal_period, "dated": getattr(profile, "dated", ""),
            # shown beside a miss: what the document itself states (to tell a wrong reading
            # from a truth label the document contradicts)
            "evidence": {"form": profile.form_type, "period_end": profile.period_end,
                         "notes": list(profile.notes)}}


def _right(field: str, truth, got: str) -> bool:
    if field == "issuer":
        return norm_issuer(truth) == norm_issuer(got)
    if field == "form":
        return (truth or "").lower() == (got or "").lower()
    if field == "fiscal_period":
        return norm_period(truth) == norm_period(got)
    return (truth or "") == (got or "")


def evaluate(profile_pdf: Callable, corpus: Path, quick: bool = False) -> dict:
    """Scores `profile_pdf` (a path -> DocumentProfile function; the bench passes the shipped
    one, a before/after comparison an older copy) on the corpus's profiles.jsonl."""
    truth = [json.loads(line) for line in (corpus / "profiles.jsonl").read_text().splitlines()
             if line.strip()]
    if quick:
        truth = [t for t in truth if t["file"].startswith("unlabelled/")]
    split = halves(t["file"] for t in truth)
    counts = {h: {f: [0, 0] for f in FIELDS} for h in (*HALVES, "all")}
    misses, seconds = [], []
    for t in truth:
        t0 = time.perf_counter()
        try:
            got = _got(profile_pdf(str(corpus / t["file"])))
        except Exception as exc:  # a crash is a miss on every field, reported with its cause
            got = dict.fromkeys(FIELDS, f"error: {type(exc).__name__}: {exc}")
            got["evidence"] = {}
        seconds.append(time.perf_counter() - t0)
        half = half_of(t["file"], split)
        for field in FIELDS:
            want = t.get("form" if field == "form" else field)
            if field in ("fiscal_period", "dated") and not want:
                continue  # scored over the files whose truth has one
            ok = _right(field, want, got[field])
            for h in (half, "all"):
                counts[h][field][0] += ok
                counts[h][field][1] += 1
            if not ok:
                misses.append({"file": t["file"], "half": half, "field": field,
                               "truth": want, "got": got[field], "read": got["evidence"]})
    accuracy = {h: {f: {"right": r, "of": n, "accuracy": round(r / n, 3) if n else None}
                    for f, (r, n) in fields.items()} for h, fields in counts.items()}
    return {"files": len(truth), "accuracy": accuracy, "misses": misses,
            "seconds_per_file": {"mean": round(sum(seconds) / max(1, len(seconds)), 3),
                                 "max": round(max(seconds, default=0.0), 3)}}


def run(out_dir: Path, quick: bool, home: str | None = None) -> dict:
    """The report (see the module docstring). `home` is accepted for the CLI's sake and unused:
    profiles are read from the PDFs, no H3_HOME is involved."""
    from h3.resources.nlp.issuer import PROFILE_VERSION, profile_pdf

    corpus = corpus_dir()
    report = evaluate(profile_pdf, corpus, quick)
    report.update(corpus=str(corpus), profile_version=PROFILE_VERSION, quick=quick)
    return report
