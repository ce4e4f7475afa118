"""Key facts of a document, each with the page it comes from: amounts, dates, parties (with their
role when a contract defines one) and risk clauses. Rules over the stored chunks, so every fact is
quoted from a page (never invented); the runtime's summary and notes come on top (analysis.py).

`normalise_value` makes values comparable across documents (the cross-document check).
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from datetime import datetime

_MONTHS = ("January|February|March|April|May|June|July|August|September|October|November|"
           "December|Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec")
_SCALE = r"(?:\s?(?:million|billion|thousand|mn|bn|m|k)\b)?"
AMOUNT = re.compile(
    rf"(?:(?:USD|EUR|GBP|CHF|US\$|\$|€|£)\s?\d[\d,]*(?:\.\d+)?{_SCALE}"
    rf"|\d[\d,]*(?:\.\d+)?{_SCALE}\s?(?:USD|EUR|GBP|dollars|euros)\b"
    rf"|\d+(?:\.\d+)?\s?%)")
DATE = re.compile(
    rf"\b(?:(?:{_MONTHS})\.?\s\d{{1,2}},?\s\d{{4}}|\d{{1,2}}\s(?:{_MONTHS})\.?\s\d{{4}}"
    rf"|\d{{4}}-\d{{2}}-\d{{2}})\b")
_ORG_SUFFIX = r"(?:Inc|Corp|Corporation|LLC|Ltd|Limited|GmbH|AG|S\.A|plc|PLC|Company|Co|Group|Holdings|Bank)"
ORG = re.compile(rf"\b((?:[A-Z][\w&'-]*\s){{0,4}}{_ORG_SUFFIX})\b\.?")
ROLE = re.compile(r"\(\s*(?:the\s+)?[\"“']?(?P<role>[A-Z][a-z]+(?:\s[A-Z][a-z]+)?)[\"”']?\s*\)")
RISK_WORDS = re.compile(
    r"\b(terminat\w*|indemnif\w*|liabilit\w*|penalt\w*|breach\w*|governing law|confidential\w*|"
    r"warrant\w*|change of control|exclusiv\w*|non-compet\w*|default\w*|damages|litigation|"
    r"guarantee\w*|covenant\w*|late payment|interest rate|force majeure)\b", re.IGNORECASE)
_SENTENCE = re.compile(r"(?<=[.;!?])\s+(?=[A-Z\"“])")
_LABEL_STOP = {"is", "was", "of", "be", "shall", "will", "equals", "equal", "to", "amounts",
               "amount", "totaled", "totals", "total", "the", "a", "an", "at", "on", "by",
               "for", "in", "and", "are", "were", "as", "from", "reached", "with", "no", "than",
               "later", "not", "its", "their", "our", "per", "each", "this", "that", "up"}


@dataclass(frozen=True, slots=True)
class Fact:
    kind: str  # amount | date | party | clause
    label: str  # what the value is, e.g. "purchase price", "buyer" (may be "")
    value: str  # as written
    page: int
    text: str  # the sentence it comes from

    def to_row(self) -> dict:
        return asdict(self)


def _label_before(sentence: str, start: int) -> str:
    """Up to three content words right before a value: 'the purchase price of $5m' -> 'purchase price'."""
    words = re.findall(r"[A-Za-z][A-Za-z-]*", sentence[:start])[-6:]
    content: list[str] = []
    for w in reversed(words):
        if w.lower() in _LABEL_STOP:
            if content:
                break
            continue
        content.insert(0, w.lower())
        if len(content) == 3:
            break
    return " ".join(content)


def extract_facts(chunks: list[tuple[int, str]], max_clauses: int = 20) -> list[Fact]:
    """Facts from (page, text) pairs in reading order; each fact once per (kind, value, page)."""
    facts: list[Fact] = []
    seen: set[tuple] = set()
    clauses = 0

    def add(f: Fact) -> None:
        key = (f.kind, f.label, f.value.lower(), f.page)
        if key not in seen:
            seen.add(key)
            facts.append(f)

    for page, text in chunks:
        for sentence in _SENTENCE.split(" ".join(text.split())):
            s = sentence.strip()[:400]
            for m in AMOUNT.finditer(s):
                add(Fact("amount", _label_before(s, m.start()), m.group(0).strip(), page, s))
            for m in DATE.finditer(s):
                add(Fact("date", _label_before(s, m.start()), m.group(0), page, s))
            for m in ORG.finditer(s):
                name = m.group(1).strip()
                role = ROLE.match(s, m.end() + (1 if s[m.end():m.end() + 1] == "." else 0))
                tail = s[m.end():m.end() + 40]
                role = role or ROLE.match(tail.lstrip(" ,"))
                add(Fact("party", role.group("role").lower() if role else "", name, page, s))
            if clauses < max_clauses and RISK_WORDS.search(s) and len(s) > 30:
                word = RISK_WORDS.search(s).group(1).lower()
                add(Fact("clause", word, s[:200], page, s))
                clauses += 1
    return facts


_SCALES = {"thousand": 1e3, "k": 1e3, "million": 1e6, "mn": 1e6, "m": 1e6, "billion": 1e9,
           "bn": 1e9}


def normalise_value(kind: str, value: str) -> str:
    """A comparable form: amounts as '<currency> <number>', dates as ISO, names lower-case."""
    v = value.strip()
    if kind == "amount":
        if v.endswith("%"):
            return f"{float(v[:-1].replace(',', '').strip()):g}%"
        currency = next((c for c in ("USD", "EUR", "GBP", "CHF", "US$", "$", "€", "£", "dollars",
                                     "euros") if c in v), "")
        currency = {"US$": "USD", "$": "USD", "dollars": "USD", "€": "EUR", "euros": "EUR",
                    "£": "GBP"}.get(currency, currency)
        num = re.search(r"\d[\d,]*(?:\.\d+)?", v)
        scale = re.search(r"(million|billion|thousand|mn|bn|m|k)\b", v[num.end():] if num else "")
        amount = float(num.group(0).replace(",", "")) if num else 0.0
        amount *= _SCALES[scale.group(1)] if scale else 1.0
        return f"{currency} {amount:.2f}".strip()
    if kind == "date":
        for fmt in ("%B %d, %Y", "%B %d %Y", "%b %d, %Y", "%b %d %Y", "%d %B %Y", "%d %b %Y",
                    "%Y-%m-%d"):
            try:
                return datetime.strptime(v.replace(".", ""), fmt).date().isoformat()
            except ValueError:
                continue
        return v.lower()
    return " ".join(re.sub(r"[^\w&]+", " ", v.lower()).split())


def cross_check(facts_by_doc: dict[str, list[dict]]) -> list[dict]:
    """Facts with the same (kind, label) in two or more documents: 'agree' when their normalised
    values are equal everywhere, else 'conflict' (with each document's values and pages)."""
    groups: dict[tuple[str, str], dict[str, list[dict]]] = {}
    for doc_id, facts in facts_by_doc.items():
        for f in facts:
            if f["kind"] in ("amount", "date", "party") and f["label"]:
                groups.setdefault((f["kind"], f["label"]), {}).setdefault(doc_id, []).append(f)
    checks = []
    for (kind, label), per_doc in sorted(groups.items()):
        if len(per_doc) < 2:
            continue
        values = {d: sorted({normalise_value(kind, f["value"]) for f in fs})
                  for d, fs in per_doc.items()}
        distinct = {v for vs in values.values() for v in vs}
        checks.append({
            "kind": kind, "label": label, "status": "agree" if len(distinct) == 1 else "conflict",
            "documents": [{"doc_id": d, "values": values[d],
                           "pages": sorted({f["page"] for f in per_doc[d]})} for d in per_doc],
        })
    return checks
