"""The development set's tune / check split, by company (issue 35).

A rule or constant is tuned on one half and kept only if it also helps the other: every
development-set report shows both halves side by side. Companies are split by the file-name
prefix (the part before the first year or form: "GENERALMILLS" of "GENERALMILLS_2019_10K.pdf"),
alternating in alphabetical order, so that both halves hold companies with one and with several
filings. The split is by company, never by file: two filings of one company share wording,
officers and layout, and a rule fitted to one of them would leak into the other half.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from difflib import SequenceMatcher
from pathlib import Path

HALVES = ("tune", "check")


def company_key(file: str) -> str:
    """The company part of a development file name: "BOEING" for "pdfs/BOEING_2022_10K.pdf"."""
    stem = Path(file).stem.upper()
    return re.split(r"_(?=(?:19|20)\d{2}|8K|10K|10Q)", stem, maxsplit=1)[0]


def _same_company(a: str, b: str) -> bool:
    """File-name prefixes one typing slip apart ("ACTIVSION..." beside "ACTIVISION...") name
    one company."""
    return SequenceMatcher(None, a, b).ratio() >= 0.95


def halves(files: Iterable[str]) -> dict[str, str]:
    """company key -> "tune" | "check" for the companies of `files`, alternating in
    alphabetical order (the first company is "tune")."""
    keys = sorted({company_key(f) for f in files})
    canonical: dict[str, str] = {}
    for key in keys:
        canonical[key] = next((c for c in dict.fromkeys(canonical.values())
                               if _same_company(c, key)), key)
    companies = sorted(set(canonical.values()))
    half = {c: HALVES[i % 2] for i, c in enumerate(companies)}
    return {key: half[canonical[key]] for key in keys}


def same_company(file_a: str, file_b: str) -> bool:
    """Whether two development files are filings of one company (file-name prefixes, a typing
    slip between them allowed)."""
    return _same_company(company_key(file_a), company_key(file_b))


def half_of(file: str, split: dict[str, str]) -> str:
    return split[company_key(file)]
