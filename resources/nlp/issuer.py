"""Who filed a document, what it is and which period it covers, read from its cover page.

SEC filings (10-K, 10-Q, 8-K, 20-F...) put the registrant's exact name on the line above
"(Exact name of registrant as specified in its charter)", the form under "FORM", the period in
"For the fiscal year / quarterly period ended <date>" and the ticker under "Trading Symbol".
Earnings releases and other reports name the company in a headline ("Acme Corp. Reports Third
Quarter 2024 Results") and the ticker as "(NYSE: ACME)". The rules below read those general
layouts; nothing here knows any particular company.

`aliases` holds the forms people type for the issuer: the name without its legal suffix
("Acme" for "Acme Corporation"), without a leading "The" or a ".com", initials ("J&J" for
"Johnson & Johnson", "IBM" for "International Business Machines"), and the ticker.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field

# Legal suffixes that end a company name (case-insensitive, optional dot and comma before).
SUFFIXES = (r"Incorporated|Inc|Corporation|Corp|Company|Co|Limited|Ltd|plc|PLC|LLC|L\.L\.C|"
            r"L\.P|LP|N\.V|S\.A|AG|SE|Holdings|Group")
_SUFFIX_END = re.compile(r"(?:,?\s+(?:" + SUFFIXES + r")\.?)+\s*$", re.IGNORECASE)
_REGISTRANT = re.compile(r"\(\s*exact name of (?:the )?registrant", re.IGNORECASE)
# A company name ending in a legal suffix inside a line of prose or a headline.
_NAME_IN_LINE = re.compile(
    r"((?:The\s+|THE\s+)?[A-Z0-9][\w&.'’-]*(?:\s+(?:&\s+)?[A-Z0-9][\w&.'’-]*){0,5},?\s+(?i:"
    + SUFFIXES + r")\b\.?)")
_NOT_A_NAME = re.compile(r"exchange|commission|securities|stock market|nasdaq|nyse|"
                         r"united states|washington|registrant|trust company|reporting company|filer|"
                         r"emerging growth|holding company|investment company",
                         re.IGNORECASE)
_FORM = re.compile(r"\bFORM\s+(10-K|10-Q|8-K|20-F|40-F|6-K|S-1|S-4|10-KT|10-QT|DEF\s*14A)\b",
                   re.IGNORECASE)
_RELEASE = re.compile(r"\b(?:reports?|announces?|posts?)\b[^.\n]{0,60}\b(?:results|earnings)\b|"
                      r"\bexhibit\s+99(?:\.\d+)?\b|\bpress\s+release\b", re.IGNORECASE)
_MONTHS = ("january february march april may june july august september october november "
           "december").split()
_DATE = r"([A-Z][a-z]+\.?\s+\d{1,2},?\s+(\d{4}))"
_PERIOD_ENDED = re.compile(r"for the\s+(?:(first|second|third|fourth)\s+)?(?:fiscal\s+)?"
                           r"(fiscal\s+year|year|quarterly\s+period|quarter|"
                           r"(?:three|six|nine|twelve)\s+months)\s+ended\s+" + _DATE,
                           re.IGNORECASE)
QUARTER_WORDS = {"first": 1, "second": 2, "third": 3, "fourth": 4}
QUARTER_RE = re.compile(r"\b(first|second|third|fourth)[\s-]+quarter(?:\s+(?:of\s+)?(?:fiscal\s+"
                      r"(?:year\s+)?)?(\d{4}))?|\bQ([1-4])\s*(?:FY\s*)?'?(\d{2,4})\b",
                      re.IGNORECASE)
_FISCAL_YEAR = re.compile(r"\b(?:fiscal(?:\s+year)?|FY)\s*'?(\d{4}|\d{2})\b", re.IGNORECASE)
_TICKER_PAREN = re.compile(r"\((?:NYSE(?:\s+American)?|NASDAQ|Nasdaq|NasdaqGS|TSX|LSE|AMEX)"
                           r"\s*:\s*([A-Z][A-Z.]{0,5})\)")
_TICKER_LINE = re.compile(r"^[A-Z]{1,5}(?:\.[A-Z])?$")
_NOT_TICKER = {"NYSE", "NONE", "N/A", "NA", "OR", "LLC", "INC", "USA", "CA", "NY", "DC", "II",
               "III", "IV"}
_MINOR_WORDS = {"and", "of", "the", "for", "&", "de", "du", "la"}
_DETERMINERS = {"a", "an", "this", "that", "our", "its", "their", "each", "any", "such", "every",
                "parent", "holding", "new", "former"}


@dataclass(frozen=True)
class DocumentProfile:
    """What a document is; every field may be empty when the cover page does not say."""

    issuer: str = ""  # "Acme Widgets Corporation" (title-cased when the cover shouts it)
    aliases: tuple[str, ...] = ()  # short forms people type, ticker included
    ticker: str = ""
    form_type: str = ""  # 10-K | 10-Q | 8-K | 20-F | earnings release | ...
    fiscal_year: int | None = None
    fiscal_period: str = ""  # "FY2023", "Q3 2024"
    period_end: str = ""  # "December 31, 2023" as written
    notes: tuple[str, ...] = field(default_factory=tuple)

    def to_json(self) -> dict:
        out = asdict(self)
        out["aliases"] = list(self.aliases)
        out["notes"] = list(self.notes)
        return out

    @classmethod
    def from_json(cls, data: dict | None) -> DocumentProfile:
        data = dict(data or {})
        data["aliases"] = tuple(data.get("aliases") or ())
        data["notes"] = tuple(data.get("notes") or ())
        known = cls.__dataclass_fields__
        return cls(**{k: v for k, v in data.items() if k in known})


def _lines(text: str) -> list[str]:
    text = text.replace("\xa0", " ")
    return [" ".join(ln.split()) for ln in text.splitlines() if ln.strip()]


def tidy_name(name: str) -> str:
    """'ACTIVISION BLIZZARD, INC.' -> 'Activision Blizzard, Inc.'; mixed case stays as written
    ('3M', 'eBay', 'Amazon.com'); short all-caps words stay capitals ('IBM', '3M')."""
    name = " ".join(name.strip(" ,;:").split())
    letters = [c for c in name if c.isalpha()]
    if not letters or not all(c.isupper() for c in letters):
        return name
    words = []
    for w in name.split():
        core = re.sub(r"[^A-Za-z]", "", w)
        if any(c.isdigit() for c in w) or (len(core) <= 3 and "." not in w
                                            and core.upper() not in ("INC", "CO", "THE", "AND")):
            words.append(w)  # 3M, IBM, AT&T
        else:
            words.append(w.lower() if w.lower() in _MINOR_WORDS else w.capitalize())
    out = " ".join(words)
    out = out[:1].upper() + out[1:]  # "THE BOEING COMPANY" -> "The Boeing Company"
    return re.sub(r"\.(com|net|org)\b", lambda m: "." + m.group(1).lower(), out,
                  flags=re.IGNORECASE)


def short_forms(issuer: str) -> list[str]:
    """The forms a reader types for a company name, longest first (see the module docstring)."""
    forms: list[str] = []

    def add(form: str) -> None:
        form = " ".join(form.strip(" ,.;").split())
        if len(form) >= 2 and form.lower() not in (f.lower() for f in forms + [issuer]):
            forms.append(form)

    base = _SUFFIX_END.sub("", issuer).strip(" ,")
    no_the = re.sub(r"^the\s+", "", base, flags=re.IGNORECASE)
    add(no_the)
    add(re.sub(r"\.(com|net|org)$", "", no_the, flags=re.IGNORECASE))
    words = [w for w in re.split(r"\s+", no_the) if w]
    if "&" in words and len(words) >= 3:  # "Johnson & Johnson" -> "J&J", "Procter & Gamble" -> "P&G"
        i = words.index("&")
        add(f"{words[i - 1][0]}&{words[i + 1][0]}".upper())
    content = [w for w in words if w.lower() not in _MINOR_WORDS]
    if len(content) >= 3 and all(w[0].isupper() for w in content):
        add("".join(w[0] for w in content).upper())  # "International Business Machines" -> IBM
    return forms


def _registrant_name(lines: list[str]) -> str:
    for i, line in enumerate(lines):
        if _REGISTRANT.search(line):
            before = _REGISTRANT.split(line)[0].strip()
            if before and not _NOT_A_NAME.search(before):
                return before
            for prev in reversed(lines[max(0, i - 3):i]):
                if not _NOT_A_NAME.search(prev) and re.search(r"[A-Za-z]", prev) \
                        and not re.match(r"^(commission file|\(|_)", prev, re.IGNORECASE):
                    return prev
    return ""


def _names_someone(name: str) -> bool:
    """Whether a suffixed name has a name before its suffix: "The company took delivery..." or
    "This Corporation" match the pattern but name no one (the word before the suffix must be a
    capitalised word other than an article or determiner)."""
    core = _SUFFIX_END.sub("", name).strip(" ,")
    words = [w for w in core.split() if w.lower() not in _MINOR_WORDS | _DETERMINERS]
    return bool(words) and (words[0][:1].isupper() or words[0][:1].isdigit())


def _suffixed_name(lines: list[str]) -> str:
    """The first company name with a legal suffix in the first lines (a cover or a headline)."""
    for line in lines[:60]:
        if _NOT_A_NAME.search(line) or len(line) > 160:
            continue
        m = next((m for m in _NAME_IN_LINE.finditer(line) if _names_someone(m.group(1))), None)
        if m:
            name = m.group(1)
            # a headline: "Acme Corp. Reports ..." -> "Acme Corp."
            return re.sub(r"^(?:the\s+)?(?=[A-Z])", lambda x: x.group(0), name)
    return ""


def _metadata_name(metadata: dict) -> str:
    for key in ("title", "subject", "author"):
        value = str(metadata.get(key) or "")
        m = re.search(r"\bfor\s+(.+?)\s+filed\b", value, re.IGNORECASE)
        if m:
            return m.group(1)
        if not _NOT_A_NAME.search(value) and (m := _NAME_IN_LINE.search(value)) \
                and _names_someone(m.group(1)):
            return m.group(1)
    return ""


def _ticker(lines: list[str], text: str) -> str:
    if m := _TICKER_PAREN.search(text):
        return m.group(1)
    for i, line in enumerate(lines):
        if re.search(r"trading\s+symbol", line, re.IGNORECASE):
            window = [(j, lines[j]) for j in range(max(0, i - 6), min(len(lines), i + 9))]
            after = [ln for j, ln in window if j > i]
            before = [ln for j, ln in reversed(window) if j < i]
            for ln in after + before:
                if _TICKER_LINE.match(ln) and ln not in _NOT_TICKER:
                    return ln
    return ""


def _period(text: str, form_type: str) -> tuple[int | None, str, str]:
    """(fiscal year, period label, period end as written)."""
    if m := _PERIOD_ENDED.search(text):
        ordinal, kind, end, year = m.group(1), m.group(2).lower(), m.group(3), int(m.group(4))
        if "year" in kind or "twelve" in kind or form_type in ("10-K", "20-F", "40-F"):
            return year, f"FY{year}", end
        if ordinal:  # "the third quarter ended ...": the company's own quarter number
            return year, f"Q{QUARTER_WORDS[ordinal.lower()]} {year}", end
        month = next((i for i, name in enumerate(_MONTHS, 1)
                      if end.lower().startswith(name[:3])), 0)
        label = f"quarter ended {end}" if not month else f"Q{(month - 1) // 3 + 1} {year}"
        return year, label, end
    for m in QUARTER_RE.finditer(text):  # the first quarter named with its year
        if m.group(1) and m.group(2):
            year = int(m.group(2))
            return year, f"Q{QUARTER_WORDS[m.group(1).lower()]} {year}", ""
        if m.group(3):
            year = int(m.group(4)) if len(m.group(4)) == 4 else 2000 + int(m.group(4))
            return year, f"Q{m.group(3)} {year}", ""
    if m := _FISCAL_YEAR.search(text):
        y = m.group(1)
        year = int(y) if len(y) == 4 else 2000 + int(y)
        return year, f"FY{year}", ""
    return None, "", ""


def profile_document(pages: list[str], metadata: dict | None = None) -> DocumentProfile:
    """The profile of a document from the text of its first pages (the cover and the next one)
    and its PDF metadata. Never raises on odd input: unknown fields stay empty, with a note."""
    metadata = metadata or {}
    text = "\n".join(pages[:2]).replace("\xa0", " ")
    lines = _lines(text)
    notes = []
    name = _registrant_name(lines) or _suffixed_name(lines) or _metadata_name(metadata)
    if not name:
        notes.append("no issuer name found on the cover page or in the metadata")
    issuer = tidy_name(name) if name else ""
    form = ""
    if m := _FORM.search(text):
        form = re.sub(r"\s+", " ", m.group(1).upper())
    elif _RELEASE.search(text):
        form = "earnings release"
    year, period, end = _period(text, form)
    ticker = _ticker(lines, text)
    aliases = short_forms(issuer) if issuer else []
    if ticker and ticker not in aliases:
        aliases.append(ticker)
    return DocumentProfile(issuer=issuer, aliases=tuple(aliases), ticker=ticker, form_type=form,
                           fiscal_year=year, fiscal_period=period, period_end=end,
                           notes=tuple(notes))


def profile_pdf(path: str, max_pages: int = 2) -> DocumentProfile:
    """`profile_document` of a PDF file (its first pages and metadata)."""
    import pymupdf

    with pymupdf.open(path) as doc:
        pages = [doc[i].get_text("text") for i in range(min(max_pages, doc.page_count))]
        return profile_document(pages, dict(doc.metadata or {}))
