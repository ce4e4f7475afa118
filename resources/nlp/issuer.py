"""Who filed a document, what it is and which period it covers, read from its first pages.

SEC filings (10-K, 10-Q, 8-K, 20-F...) put the registrant's exact name on the line above
"(Exact name of registrant as specified in its charter)", the form under "FORM", the period in
"For the fiscal year / quarterly period ended <date>", an 8-K's date in "Date of Report (Date of
earliest event reported)" and the ticker under "Trading Symbol". Press releases (earnings
releases, often filed as Exhibit 99.1 of an 8-K) name the company in a dateline ("CITY, State,
Month D, YYYY -- Acme Corp. (NYSE: ACME) today reported ...") and a headline ("Acme Corp. Reports
Third Quarter 2024 Results"). The rules below read those general layouts; nothing here knows any
particular company.

Periods are the company's own fiscal ones: a 10-Q's quarter comes from the periods its statements
cover ("six months ended" -> the second quarter; "26 weeks ended" likewise), or from a quarter the
text names ("second quarter of fiscal 2023"); its fiscal year is the one that quarter belongs to,
named, as most filers name it, for the calendar year in which it ends (the year whose first days a
52/53-week year ends in is named for the year before).

`aliases` holds the forms people type for the issuer: the name without its legal suffix
("Acme" for "Acme Corporation"), without a leading "The" or a ".com", initials ("J&J" for
"Johnson & Johnson", "IBM" for "International Business Machines"), the ticker, and the former
names the document states ("Acme Corp. (formerly known as Widget Inc.)") with their short forms.
"""

from __future__ import annotations

import logging
import re
from dataclasses import asdict, dataclass, field, replace
from datetime import date

# Bumped when the rules change what a profile holds: documents stored with an older version are
# profiled again (resources/recall/documents.py).
PROFILE_VERSION = 2
# How many first pages a profile reads: the cover and the next page name the issuer and the form;
# the pages after them (a 10-Q's contents and first statements) only tell the quarter.
PROFILE_PAGES = 6
COVER_PAGES = 2

# Legal suffixes that end a company name (case-insensitive, optional dot and comma before).
SUFFIXES = (r"Incorporated|Inc|Corporation|Corp|Company|Co|Limited|Ltd|plc|PLC|LLC|L\.L\.C|"
            r"L\.P|LP|N\.V|S\.A|AG|SE|Holdings|Group")
# "& Co." is one suffix ("Fennimore & Co."): the ampersand goes with it
_SUFFIX_END = re.compile(r"(?:(?:^|,?\s+)(?:&\s*)?(?:" + SUFFIXES + r")\.?)+\s*$", re.IGNORECASE)
_HAS_SUFFIX = re.compile(r"(?:^|[\s,])(?:" + SUFFIXES + r")\.?\s*$", re.IGNORECASE)
_REGISTRANT = re.compile(r"\(?\s*exact name of (?:the )?registrant", re.IGNORECASE)
# A word of a company name: capitalised, a digit, or camel case after a lowercase prefix ("zTrek")
_NAME_WORD = r"(?:[A-Z0-9]|[a-z]{1,2}[A-Z])[\w&.'’-]*"
# A company name ending in a legal suffix inside a line of prose or a headline.
_NAME_IN_LINE = re.compile(
    r"((?:The\s+|THE\s+)?" + _NAME_WORD + r"(?:\s+(?:&\s+)?" + _NAME_WORD + r"){0,5},?\s+(?i:"
    + SUFFIXES + r")\b\.?)")
_NOT_A_NAME = re.compile(r"exchange|commission|securities|stock market|nasdaq|nyse|"
                         r"united states|washington|registrant|trust company|reporting company|"
                         r"filer|emerging growth|holding company|investment company",
                         re.IGNORECASE)
# Lines near a cover's name label that are labels, not the name.
_COVER_LABEL = re.compile(r"^(?:commission\s+file|for\s+the\b|\(|_|☐|☒|or$)|transition\s+period|"
                          r"date\s+of\s+report|^[\d\s().-]+$", re.IGNORECASE)
_FORMS = r"10-K|10-Q|8-K|20-F|40-F|6-K|S-1|S-4|10-KT|10-QT|DEF\s*14A"
_FORM = re.compile(r"\bFORM\s+(" + _FORMS + r")\b", re.IGNORECASE)
# The form as a cover states it: on a line of its own ("FORM 10-Q", "Form 8-K/A")
_COVER_FORM = re.compile(r"^(?:[☒☐]\s*)?FORM\s+(" + _FORMS + r")(?:/A)?\s*$", re.IGNORECASE)
# The report kinds a cover names when its "FORM" line is an image
_REPORT_KIND = (
    (re.compile(r"\bannual\s+report\s+pursuant\s+to\s+section\s+13", re.IGNORECASE), "10-K"),
    (re.compile(r"\bquarterly\s+report\s+pursuant\s+to\s+section\s+13", re.IGNORECASE), "10-Q"),
    (re.compile(r"\bcurrent\s+report\b[\s\S]{0,200}\bdate\s+of\s+report", re.IGNORECASE), "8-K"),
)
_EDGAR_SUBJECT = re.compile(r"\bForm\s+(" + _FORMS + r")(?:/A)?\s+filed\s+on\b", re.IGNORECASE)
_RESULTS = r"(?:results|earnings)"
# A release headline or lead: "Acme Reports Third Quarter 2024 Results", "... today reported
# financial results for its first quarter"
_RELEASE_HEAD = re.compile(
    r"\b(?:reports?|reported|announces?|announced|posts?|delivers?|releases?)\b[^\n]{0,90}?\b"
    + _RESULTS + r"\b", re.IGNORECASE)
_RELEASE_MARK = re.compile(r"\b(?:news|press)\s+release\b|\bfor\s+immediate\s+release\b|"
                           r"\bexhibit\s+99(?:\.\d+)?\b", re.IGNORECASE)
# An 8-K on results: Item 2.02 "Results of Operations", or a lead announcing results
_RESULTS_8K = re.compile(r"\bresults\s+of\s+operations\b|\b(?:announc|report)\w*\b[^.]{0,80}"
                         r"\b(?:financial\s+)?results\b", re.IGNORECASE)
_MONTHS = ("january february march april may june july august september october november "
           "december").split()
_MONTH = (r"(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|"
          r"Sep(?:t(?:ember)?)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)")
# "June 30, 2023", "Jan. 26, 2023", "30 June 2023", "4/26/2023" (US order)
_DATE = re.compile(r"\b(" + _MONTH + r")\.?\s+(\d{1,2})\s*,?\s*(\d{4})\b|"
                   r"\b(\d{1,2})/(\d{1,2})/(\d{4})\b|"
                   r"\b(\d{1,2})\s+(" + _MONTH + r")\.?,?\s+(\d{4})\b", re.IGNORECASE)
# The period statement of a cover: "For the quarterly period ended", "For the fiscal year ended"
# (the date may follow on a later line: covers set it in a table cell)
_PERIOD_ENDED = re.compile(r"\bfor\s+the\s+(?:(first|second|third|fourth)\s+)?(?:fiscal\s+)?"
                           r"(fiscal\s+year|year|(?:fiscal\s+)?quarterly\s+period|"
                           r"(?:fiscal\s+)?quarter|(?:three|six|nine|twelve)\s+months)\s+"
                           r"(?:ended|ending)\b", re.IGNORECASE)
QUARTER_WORDS = {"first": 1, "second": 2, "third": 3, "fourth": 4}
QUARTER_RE = re.compile(r"\b(first|second|third|fourth)[\s-]+quarter(?:\s+(?:of\s+)?(?:fiscal\s+"
                      r"(?:year\s+)?)?(\d{4}))?|\bQ([1-4])\s*(?:FY\s*)?'?(\d{2,4})\b",
                      re.IGNORECASE)
# A quarter a release or a report names, with its year when it says one: "first quarter of
# fiscal 2023", "Fourth-Quarter and Full-Year 2022", "Q2 FY24", "second fiscal quarter 2023",
# "fiscal 2023 first quarter". Groups: ordinal word, digit, "fiscal" before the year, year;
# or year, ordinal word, digit for the year-first form.
_QUARTER_NAMED = re.compile(
    r"\b(?:(first|second|third|fourth)(?:[\s-]+fiscal)?[\s-]+quarter|Q([1-4]))\b"
    r"(?:[\s-]+(?:and|&)[\s-]+(?:the\s+)?(?:full|fiscal)[\s-]+year)?"
    r"(?:\s*(?:of\s+|,\s*|ended\s+)?(?:the\s+)?(?:(fiscal(?:\s+year)?|FY)\s*'?)?(\d{4}|(?<=FY)\d{2}"
    r"|(?<=FY )\d{2}|(?<=')\d{2})\b)?|"
    r"\b(?:fiscal(?:\s+year)?|FY)\s*'?(\d{4}|\d{2})[\s-]+(?:(first|second|third|fourth)[\s-]+"
    r"(?:fiscal[\s-]+)?quarter|Q([1-4]))\b", re.IGNORECASE)
_FISCAL_YEAR = re.compile(r"\b(?:fiscal(?:\s+year)?|FY)\s*'?(\d{4}|\d{2})\b", re.IGNORECASE)
_FULL_YEAR = re.compile(r"\b(?:full|fiscal)[\s-]+year\s+(?:of\s+)?(?:fiscal\s+)?(\d{4})\b|"
                        r"\b(\d{4})\s+(?:full[\s-]+year|annual)\b", re.IGNORECASE)
# The periods a 10-Q's statements cover: the longest tells the quarter (six months: the second)
_SPAN = re.compile(r"\b(three|six|nine|3|6|9)[\s-]+months?\s+(?:periods?\s+)?end(?:ed|ing)\b|"
                   r"\b(twelve|thirteen|sixteen|twenty[\s-]+four|twenty[\s-]+six|twenty[\s-]+eight|"
                   r"thirty[\s-]+six|thirty[\s-]+nine|forty|12|13|16|24|26|28|36|39|40)[\s-]+weeks?"
                   r"\s+(?:periods?\s+)?end(?:ed|ing)\b", re.IGNORECASE)
_NUMBER_WORDS = {"three": 3, "six": 6, "nine": 9, "twelve": 12, "thirteen": 13, "sixteen": 16,
                 "twentyfour": 24, "twentysix": 26, "twentyeight": 28, "thirtysix": 36,
                 "thirtynine": 39, "forty": 40}
# "the Annual Report on Form 10-K for the fiscal year ended December 31, 2022": the year before
_PRIOR_YEAR_END = re.compile(r"\b(?:fiscal\s+)?year\s+ended\b", re.IGNORECASE)
_DATE_OF_REPORT = re.compile(r"\bdate\s+of\s+report\b", re.IGNORECASE)
# "<Name> (NYSE: ACME)", "<Name> today reported", "<Name> Reports ... Results"
_EXCHANGES = r"NYSE(?:\s+American)?|NASDAQ|Nasdaq(?:GS|GM)?|TSX|LSE|AMEX|NYSE\s+Arca|OTC\w*"
_TICKER_PAREN = re.compile(r"[(\[](?:" + _EXCHANGES + r")\s*:\s*([A-Z][A-Z.]{0,5})[)\]]")
_NAME_ANCHOR = re.compile(r"\s*[(\[](?:" + _EXCHANGES + r")\s*:\s*[A-Z][A-Z.]{0,5}[)\]]|"
                          r"\s+today\s+(?:announced|reported|released|posted)\b|"
                          r"\s+(?:Reports|Announces|REPORTS|ANNOUNCES|Posts|POSTS|Delivers|"
                          r"DELIVERS)\b")
# dateline separators: "SEATTLE, Oct. 24, 2024 -- ", "OAKLAND — ", "/PRNewswire/ -- "
_SEPARATOR = re.compile(r"\s(?:--|–|—|-)\s|/[^/\n]{2,40}/|:\s")
_TRAILING_NAME = re.compile(r"((?:The\s+)?" + _NAME_WORD + r"(?:,?\s+(?:(?:&|and|of|de)\s+)?"
                            + _NAME_WORD + r"){0,7})\s*$")
# the issuer's earlier legal name: "Acme Inc. (formerly known as Widget Corp.)", "(formerly
# "WIDGET CORP.")", "changed its name from Widget Corp. to Acme Inc."
_FORMERLY = re.compile(r"^\s*[,(]?\s*(?:formerly(?:\s+known\s+as|\s+named|\s+called)?|f/k/a)\s*"
                       r",?\s*[\"“]?([^\"”()\n;]{2,80}?,?\s+(?i:" + SUFFIXES + r")\.?)[\"”),;]",
                       re.IGNORECASE)
_FORMER_LABEL = re.compile(r"\(?\s*former\s+name\b[^)\n]*(?:\)|$)", re.IGNORECASE)
_NOT_APPLICABLE = re.compile(r"^(?:n/?a|none|not\s+applicable|no\s+change)\b", re.IGNORECASE)
_TICKER_LINE = re.compile(r"^[A-Z]{1,5}(?:\.[A-Z])?$")
_NOT_TICKER = {"NYSE", "NONE", "N/A", "NA", "OR", "LLC", "INC", "USA", "CA", "NY", "DC", "II",
               "III", "IV", "YES", "NO"}  # (a cover's check boxes read "YES ☒ NO ☐")
_MINOR_WORDS = {"and", "of", "the", "for", "&", "de", "du", "la"}
_DETERMINERS = {"a", "an", "this", "that", "our", "its", "their", "each", "any", "such", "every",
                "parent", "holding", "new", "former"}
# A text layer is read as words when at least this share of its tokens are words or numbers;
# fonts without a Unicode map extract as punctuation soup ('!"# $&()*+'), far below it.
MIN_WORD_SHARE = 0.5
# An OCR reading of a cover's name (a logo) is taken as the text layer's most similar company
# name when at least this similar (difflib ratio): a misread letter or two, not another company.
MIN_OCR_NAME_SIMILARITY = 0.6
_CJK_PUNCT = re.compile(r"[\s，。、；：！？（）「」『』《》]+")


@dataclass(frozen=True)
class DocumentProfile:
    """What a document is; every field may be empty when the first pages do not say."""

    issuer: str = ""  # "Acme Widgets Corporation" (title-cased when the cover shouts it)
    aliases: tuple[str, ...] = ()  # short forms people type, ticker and former names included
    ticker: str = ""
    form_type: str = ""  # 10-K | 10-Q | 8-K | 20-F | earnings release | press release | ...
    fiscal_year: int | None = None  # the FISCAL year (as the company names it)
    fiscal_period: str = ""  # "FY2023", "Q3 2024" (fiscal quarter 3 of fiscal year 2024)
    period_end: str = ""  # "December 31, 2023" as written
    notes: tuple[str, ...] = field(default_factory=tuple)
    dated: str = ""  # the document's own date, ISO (an 8-K's date of report, a release's date)
    former_names: tuple[str, ...] = ()  # earlier legal names the document states

    def to_json(self) -> dict:
        out = asdict(self)
        for key in ("aliases", "notes", "former_names"):
            out[key] = list(getattr(self, key))
        out["version"] = PROFILE_VERSION
        return out

    @classmethod
    def from_json(cls, data: dict | None) -> DocumentProfile:
        """A stored profile; keys it does not know ("version", or a later field) are ignored
        and fields it lacks (a profile stored before them) stay empty."""
        data = dict(data or {})
        for key in ("aliases", "notes", "former_names"):
            data[key] = tuple(data.get(key) or ())
        known = cls.__dataclass_fields__
        return cls(**{k: v for k, v in data.items() if k in known})


def _lines(text: str) -> list[str]:
    text = text.replace("\xa0", " ")
    return [" ".join(ln.split()) for ln in text.splitlines() if ln.strip()]


def legible(text: str) -> bool:
    """Whether a page's text layer reads as words (MIN_WORD_SHARE), not as the punctuation soup
    that fonts without a Unicode map extract to; an empty page is not legible."""
    tokens = [t.strip(".,;:()[]{}\"'“”‘’!?*•·-–—/%$€£¥#+=") for t in _CJK_PUNCT.split(text)]
    tokens = [t for t in tokens if t]
    if not tokens:
        return False
    words = sum(t.isalpha() or bool(re.fullmatch(r"\d[\d.,]*", t)) for t in tokens)
    return words >= MIN_WORD_SHARE * len(tokens)


def tidy_name(name: str) -> str:
    """'NORTHWIND TRADING, INC.' -> 'Northwind Trading, Inc.'; mixed case stays as written
    ('4K Media', 'zTrek', 'Shopmart.com'); short all-caps words stay capitals ('IBM', '4K');
    a shouted 'McNAME' becomes 'McName'."""
    name = " ".join(str(name or "").strip(" ,;:").split())
    name = re.sub(r"\s+(?=[.,](?:\s|$))", "", name)  # "ACME, Inc ." (a kerned cover) -> "Inc."
    letters = [c for c in re.sub(r"\b(?:Mc|Mac)(?=[A-Z])", "", name) if c.isalpha()]
    if not letters or not all(c.isupper() for c in letters):
        return name
    words = []
    for w in name.split():
        core = re.sub(r"[^A-Za-z]", "", w)
        if m := re.fullmatch(r"(Mc|Mac)([A-Z][A-Z'’-]+)([.,]?)", w):
            words.append(m.group(1) + m.group(2).capitalize() + m.group(3))
        elif any(c.isdigit() for c in w) or (len(core) <= 3 and "." not in w
                                              and core.upper() not in ("INC", "CO", "THE", "AND")):
            words.append(w)  # 4K, IBM, AT&T
        else:
            # "HARLOW-BRIGGS" -> "Harlow-Briggs": each part of a hyphenated word
            words.append(w.lower() if w.lower() in _MINOR_WORDS else
                         "-".join(part.capitalize() for part in w.split("-")))
    out = " ".join(words)
    out = out[:1].upper() + out[1:]  # "THE EXAMPLE COMPANY" -> "The Example Company"
    return re.sub(r"\.(com|net|org)\b", lambda m: "." + m.group(1).lower(), out,
                  flags=re.IGNORECASE)


def short_forms(issuer: str) -> list[str]:
    """The forms a reader types for a company name, longest first (see the module docstring).
    Never raises: any string, however odd, gives a (possibly empty) list."""
    issuer = " ".join(str(issuer or "").split())
    forms: list[str] = []

    def add(form: str) -> None:
        form = " ".join(form.strip(" ,.;&").split())
        words = {w.lower() for w in re.findall(r"[^\W_]+", form)}
        # a form of only minor words or suffixes ("The", "Inc") would name every company
        if len(form) < 2 or not words or words <= _MINOR_WORDS | _DETERMINERS \
                or _SUFFIX_END.fullmatch(form):
            return
        if form.lower() not in (f.lower() for f in forms + [issuer]):
            forms.append(form)

    base = _SUFFIX_END.sub("", issuer).strip(" ,&")
    no_the = re.sub(r"^the\s+", "", base, flags=re.IGNORECASE)
    add(no_the)
    add(re.sub(r"\.(com|net|org)$", "", no_the, flags=re.IGNORECASE))
    words = no_the.split()
    if "&" in words:  # "Johnson & Johnson" -> "J&J", "Procter & Gamble" -> "P&G"
        i = words.index("&")
        if 0 < i < len(words) - 1 and words[i - 1][0].isalpha() and words[i + 1][0].isalpha():
            add(f"{words[i - 1][0]}&{words[i + 1][0]}".upper())
    content = [w for w in words if w.lower() not in _MINOR_WORDS]
    if len(content) >= 3 and all(w[0].isupper() for w in content):
        add("".join(w[0] for w in content).upper())  # "International Business Machines" -> IBM
    return forms


# ---- dates -----------------------------------------------------------------------------------

def _month(word: str) -> int:
    word = word.lower().rstrip(".")
    return next((i for i, name in enumerate(_MONTHS, 1) if name.startswith(word[:3])), 0)


def _as_date(m: re.Match) -> date | None:
    """The date a `_DATE` match writes, or None for an impossible one ("February 30")."""
    try:
        if m.group(1):
            return date(int(m.group(3)), _month(m.group(1)), int(m.group(2)))
        if m.group(4):
            return date(int(m.group(6)), int(m.group(4)), int(m.group(5)))
        return date(int(m.group(9)), _month(m.group(8)), int(m.group(7)))
    except ValueError:
        return None


def _dates(text: str) -> list[tuple[re.Match, date]]:
    return [(m, d) for m in _DATE.finditer(text) if (d := _as_date(m))]


def _add_months(day: date, months: int) -> date:
    month = day.month - 1 + months
    year, month = day.year + month // 12, month % 12 + 1
    for d in (day.day, 30, 29, 28):
        try:
            return date(year, month, d)
        except ValueError:
            continue
    return date(year, month, 28)


def _fiscal_year_ending(end: date) -> int:
    """The name of the fiscal year that ends on `end`: its calendar year, except that a 52/53-week
    year ending in the first days of January is named for the year before (it is that year's)."""
    return end.year - 1 if end.month == 1 and end.day <= 7 else end.year


def _year(text: str) -> int:
    return int(text) if len(text) == 4 else 2000 + int(text)


# ---- issuer ----------------------------------------------------------------------------------

def _registrant_name(lines: list[str]) -> tuple[str, bool]:
    """(the name on the cover's "Exact name of registrant" label, whether the label was found):
    a label without a name beside it means the name is set as an image (a logo)."""
    found = False
    for i, line in enumerate(lines):
        if not _REGISTRANT.search(line):
            continue
        found = True
        if not line.lstrip().startswith("("):
            # no parentheses: the label of a name line above, or a table's column header with
            # the registrants' names below it (several registrants file one report)
            near = [*reversed(lines[max(0, i - 2):i]), *lines[i + 1:i + 30]]
            for other in near:
                if (m := _NAME_IN_LINE.fullmatch(other.strip(" ,"))) and _names_someone(m[1]) \
                        and not _NOT_A_NAME.search(other):
                    return m.group(1), True
            continue
        before = _REGISTRANT.split(line)[0].strip()
        if before and not _NOT_A_NAME.search(before) and not _COVER_LABEL.search(before):
            return before, True
        for prev in reversed(lines[max(0, i - 3):i]):
            if not _NOT_A_NAME.search(prev) and re.search(r"[A-Za-z]", prev) \
                    and not _COVER_LABEL.search(prev):
                return prev, True
    return "", found


def _names_someone(name: str) -> bool:
    """Whether a suffixed name has a name before its suffix: "The company took delivery..." or
    "This Corporation" match the pattern but name no one (the word before the suffix must be a
    capitalised word other than an article or determiner)."""
    core = _SUFFIX_END.sub("", name).strip(" ,&")
    words = [w for w in core.split() if w.lower() not in _MINOR_WORDS | _DETERMINERS]
    return bool(words) and (words[0][:1].isupper() or words[0][:1].isdigit()
                            or bool(re.match(r"[a-z]{1,2}[A-Z]", words[0])))


def _suffixed_name(lines: list[str]) -> str:
    """The first company name with a legal suffix in the first lines (a cover or a headline)."""
    for line in lines[:60]:
        if _NOT_A_NAME.search(line) or len(line) > 160:
            continue
        m = next((m for m in _NAME_IN_LINE.finditer(line) if _names_someone(m.group(1))), None)
        if m:
            return m.group(1)
    return ""


def _release_name(lines: list[str]) -> str:
    """The company a press release is about: the name before "(NYSE: X)", before "today
    announced/reported", or before the headline's "Reports"/"Announces" (in that order of
    trust), taken back to the dateline's separator."""
    found: dict[int, str] = {}
    for line in lines[:80]:
        for m in _NAME_ANCHOR.finditer(line):
            kind = 0 if m.group(0).lstrip()[:1] in "([" else \
                1 if "today" in m.group(0).lower() else 2
            if kind in found:
                continue
            before = _SEPARATOR.split(line[:m.start()])[-1]
            if (n := _TRAILING_NAME.search(before)) and _names_someone(n.group(1)) \
                    and not _NOT_A_NAME.search(n.group(1)) and len(n.group(1)) <= 80:
                found[kind] = n.group(1).strip(" ,")
    return next((found[k] for k in sorted(found)), "")


def _with_suffix(name: str, text: str) -> str:
    """"Acme" -> "Acme Corp." when the text writes the name with its legal suffix somewhere
    (a release's headline or "About Acme" paragraph); the name itself otherwise."""
    if not name or _HAS_SUFFIX.search(name):
        return name
    m = re.search(r"(?<!\w)" + re.escape(name) + r",?\s+(?:" + SUFFIXES + r")\b\.?", text,
                  re.IGNORECASE)
    return text[m.start():m.end()] if m else name


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


def _former_names(lines: list[str], text: str, issuer: str) -> list[str]:
    """Earlier legal names of the issuer: the cover's "(Former name or former address, if changed
    since last report)" line when it holds a company name, and "formerly (known as) X" or "changed
    its name from X" written right after the issuer's name (a product's or a trustee's former
    name elsewhere in the text is not the issuer's)."""
    out: list[str] = []
    for i, line in enumerate(lines):
        if not _FORMER_LABEL.search(line):
            continue
        same = line.split(":", 1)[1].strip() if ":" in line else ""
        for value in (same, lines[i - 1] if i else ""):
            value = value.strip()
            if value and not _NOT_APPLICABLE.match(value) and not re.search(r"\d", value) \
                    and _HAS_SUFFIX.search(value) and _names_someone(value) \
                    and not _REGISTRANT.search(value):
                out.append(value)
                break
    names = [n for n in dict.fromkeys([issuer, *short_forms(issuer)]) if len(n) >= 3]
    flat = text.replace("\n", " ")
    for name in names:
        for m in re.finditer(re.escape(name), flat, re.IGNORECASE):
            if f := _FORMERLY.match(flat[m.end():m.end() + 140]):
                out.append(f.group(1))
    for m in re.finditer(r"\bchang(?:ed|ing)\s+(?:its\s+)?(?:legal\s+|corporate\s+)?name\s+from\s+"
                         r"[\"“]?([^\"”\n]{2,80}?,?\s+(?i:" + SUFFIXES + r")\.?)[\"”]?,?\s+to\s+"
                         r"[\"“]?([^\"”\n]{2,80}?)[\"”.,]", flat, re.IGNORECASE):
        if any(n.lower() in m.group(2).lower() for n in names):
            out.append(m.group(1))
    kept: list[str] = []
    for name in out:
        name = tidy_name(name.strip(" ,\"“”"))
        if name and re.sub(r"\W", "", name.lower()) != re.sub(r"\W", "", issuer.lower()) \
                and name.lower() not in (k.lower() for k in kept):
            kept.append(name)
    return kept


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


# ---- form --------------------------------------------------------------------------------------

def _form_type(lines: list[str], text: str, metadata: dict) -> str:
    """The form a cover states on a line of its own, else the report kind it names, else a press
    release (its headline or lead reports results: an earnings release), else the form EDGAR's
    PDF metadata names, else any "Form X" the text mentions."""
    for line in lines[:60]:
        if m := _COVER_FORM.match(line):
            return re.sub(r"\s+", " ", m.group(1).upper())
    head = "\n".join(lines[:60])
    for pattern, form in _REPORT_KIND:
        if pattern.search(head):
            return form
    if _RELEASE_HEAD.search(head):
        return "earnings release"
    if _RELEASE_MARK.search(head):
        return "press release"
    if m := _EDGAR_SUBJECT.search(str(metadata.get("subject") or "")):
        return m.group(1).upper()
    if m := _FORM.search(text):
        return re.sub(r"\s+", " ", m.group(1).upper())
    return ""


# ---- dates of the document -------------------------------------------------------------------

def _date_near(text: str, start: int, end: int, before: int = 120, after: int = 160) -> date | None:
    """The date written nearest a label spanning text[start:end] (a cover sets it after the label,
    on the next line, or on the line above)."""
    best: tuple[int, date] | None = None
    for m, d in _dates(text[max(0, start - before):end + after]):
        pos = max(0, start - before) + m.start()
        distance = pos - end if pos >= end else (start - pos) + 40  # after the label first
        if best is None or distance < best[0]:
            best = (distance, d)
    return best[1] if best else None


def _dated(lines: list[str], text: str, form: str, metadata: dict) -> str:
    """An 8-K's date of report; a release's date (its dateline, or a date standing alone at the
    top); EDGAR's metadata date of an 8-K when the cover's is unreadable. "" otherwise."""
    if form == "8-K":
        if (m := _DATE_OF_REPORT.search(text)) and (d := _date_near(text, m.start(), m.end())):
            return d.isoformat()
        subject = str(metadata.get("subject") or "")
        if m := re.search(r"period\s+ending\s+(\d{4}-\d{2}-\d{2})", subject):
            return m.group(1)
        return ""
    if form not in ("earnings release", "press release"):
        return ""
    for line in lines[:40]:  # a dateline: "SEATTLE, Oct. 24, 2024 -- Acme ..."
        for m, d in _dates(line):
            if re.match(r"\s*(?:/[^/\n]{2,40}/\s*)?(?:--|–|—|-)\s", line[m.end():]):
                return d.isoformat()
    for line in lines[:15]:  # a date opening a line near the top (alone, or beside a contact)
        found = _dates(line)
        if found and found[0][0].start() == 0:
            return found[0][1].isoformat()
    return ""


# ---- period ------------------------------------------------------------------------------------

def _named_quarter(m: re.Match) -> tuple[int, int | None, bool]:
    """(quarter, year or None, whether the year is called fiscal) of a `_QUARTER_NAMED` match."""
    if m.group(5):  # "fiscal 2023 first quarter"
        q = QUARTER_WORDS[m.group(6).lower()] if m.group(6) else int(m.group(7))
        return q, _year(m.group(5)), True
    q = QUARTER_WORDS[m.group(1).lower()] if m.group(1) else int(m.group(2))
    return q, _year(m.group(4)) if m.group(4) else None, bool(m.group(3))


def _quarter_from_spans(text: str) -> int:
    """The quarter a 10-Q's statement periods tell: three months -> 1, six -> 2, nine -> 3
    (weeks likewise: 12/13/16 -> 1, 24/26/28 -> 2, 36/39/40 -> 3); 0 when none is named."""
    best = 0
    for m in _SPAN.finditer(text):
        word = re.sub(r"[\s-]", "", (m.group(1) or m.group(2)).lower())
        n = int(word) if word.isdigit() else _NUMBER_WORDS[word]
        q = n // 3 if m.group(1) else min(3, max(1, round(n / 13)))
        best = max(best, q)
    return best


def _quarter_from_prior_year(text: str, end: date) -> int:
    """The quarter a 10-Q covers from the end of the fiscal year before it, which the report
    names ("Annual Report on Form 10-K for the fiscal year ended ..."): 3 months later is the
    first quarter's end, 6 the second's, 9 the third's. 0 when no such year end is named."""
    for m in _PRIOR_YEAR_END.finditer(text):
        d = _date_near(text, m.start(), m.end(), before=0, after=60)
        if d and d < end:
            months = round((end - d).days / 30.44)
            if months in range(2, 11):
                return min(3, max(1, round(months / 3)))
    return 0


def _period_end(text: str) -> tuple[str, date | None, re.Match | None]:
    """(kind, end date, match) of the cover's period statement ("For the quarterly period ended
    June 30, 2023"): kind "year", "quarter" or ""."""
    for m in _PERIOD_ENDED.finditer(text):
        d = _date_near(text, m.start(), m.end(), before=0, after=80)
        if not d:
            continue
        kind = m.group(2).lower()
        return ("year" if "year" in kind or "twelve" in kind else "quarter"), d, m
    return "", None, None


def _end_as_written(text: str, m: re.Match | None, end: date | None) -> str:
    if m is None or end is None:
        return ""
    for dm, d in _dates(text[m.end():m.end() + 80]):
        if d == end:
            return " ".join(dm.group(0).split())
    return ""


def _release_period(lines: list[str], text: str) -> tuple[int | None, str, str]:
    """A release's period: the quarter (with its year) its headline or lead names ("Reports
    Fourth Quarter and Full Year 2022 Results", "results for its first quarter ended March 31,
    2023", "First Quarter Fiscal 2024"), else the full year it reports."""
    top = lines[:60]
    # a headline may wrap: a line, or a line and the next, that reports results, in page order
    heads = []
    for i, line in enumerate(top):
        if _RELEASE_HEAD.search(line):
            heads.append(line)
        elif i + 1 < len(top) and _RELEASE_HEAD.search(f"{line} {top[i + 1]}"):
            heads.append(f"{line} {top[i + 1]}")
    for head in heads:
        quarters = [_named_quarter(m) for m in _QUARTER_NAMED.finditer(head)]
        if quarters:
            q, year, _ = quarters[0]
            if year is None:  # "Reports Third Quarter ... Results for Fiscal 2023": the year
                # the headline names apart from the quarter, else where the text says it
                # (a year inside a date is the release's date, not its period)
                y = _FISCAL_YEAR.search(head) or re.search(r"\b((?:19|20)\d{2})\b",
                                                           _DATE.sub(" ", head))
                year = _year(y.group(1)) if y else _year_of_quarter(q, text)
            if year:
                return year, f"Q{q} {year}", ""
        if m := _FULL_YEAR.search(head):
            year = int(m.group(1) or m.group(2))
            return year, f"FY{year}", ""
    flat = " ".join(lines)
    for m in re.finditer(_RESULTS + r"\s+(?:for|of)\s+(?:the|its)\s+", flat, re.IGNORECASE):
        if q := _QUARTER_NAMED.match(flat, m.end()):
            quarter, year, _ = _named_quarter(q)
            if year is None and (d := _date_near(flat, q.start(), q.end(), 0, 60)):
                # "the fourth quarter ended June 30, 2025": the year that quarter closes
                end = _add_months(d, 3 * (4 - quarter))
                year = _fiscal_year_ending(end)
            if year:
                return year, f"Q{quarter} {year}", ""
    for m in QUARTER_RE.finditer(text):  # the first quarter named with its year
        if m.group(1) and m.group(2):
            year = int(m.group(2))
            return year, f"Q{QUARTER_WORDS[m.group(1).lower()]} {year}", ""
        if m.group(3):
            year = _year(m.group(4)) if len(m.group(4)) in (2, 4) else None
            if year:
                return year, f"Q{m.group(3)} {year}", ""
    return None, "", ""


def _year_of_quarter(quarter: int, text: str) -> int | None:
    """The year the text gives a quarter it names without one in the headline."""
    for m in _QUARTER_NAMED.finditer(text):
        q, year, _ = _named_quarter(m)
        if q == quarter and year:
            return year
    return None


def _period(lines: list[str], cover: str, text: str, form: str,
            notes: list[str]) -> tuple[int | None, str, str]:
    """(fiscal year, period label, period end as written) (see the module docstring)."""
    kind, end, m = _period_end(cover)
    written = _end_as_written(cover, m, end)
    if form in ("earnings release", "press release"):
        return _release_period(lines, text)
    if form == "8-K":  # only an 8-K on results has a period: the quarter it reports
        year, label, _ = _release_period(lines, text) if _RESULTS_8K.search(text) else \
            (None, "", "")
        return year, label, ""
    if end and (kind == "year" or form in ("10-K", "20-F", "40-F", "10-KT")):
        year = _fiscal_year_ending(end)
        if named := re.search(r"\bfiscal\s+(?:year\s+)?(\d{4})\s*(?:\(|,)?\s*(?:ended|ending)\b",
                              cover, re.IGNORECASE):
            year = int(named.group(1))  # the filer names its year itself
        return year, f"FY{year}", written
    if end:  # a quarter: its number from the statements, the text or the year before
        quarter = _quarter_from_spans(text)
        named_year = None
        if m and m.group(1):  # "For the second quarter ended ..."
            quarter = quarter or QUARTER_WORDS[m.group(1).lower()]
        # "the second quarter of fiscal 2023": the filer's own naming of quarter and year
        named = next(((q, y) for q, y, fiscal in map(_named_quarter,
                                                     _QUARTER_NAMED.finditer(cover))
                      if y and fiscal), None)
        if named and quarter in (0, named[0]):
            quarter, named_year = named
        quarter = quarter or _quarter_from_prior_year(text, end)
        if not quarter:  # nothing tells the fiscal quarter: assume a calendar fiscal year
            notes.append("fiscal quarter not stated; taken from the calendar")
            quarter = (end.month - 1) // 3 + 1
        year = named_year or _fiscal_year_ending(_add_months(end, 3 * (4 - quarter)))
        return year, f"Q{quarter} {year}", written
    if form not in ("10-K", "20-F", "40-F", "10-KT"):
        year, label, _ = _release_period(lines, text)
        if label:
            return year, label, ""
    if fm := _FISCAL_YEAR.search(cover):
        year = _year(fm.group(1))
        return year, f"FY{year}", ""
    return None, "", ""



# ---- the profile -------------------------------------------------------------------------------

def profile_document(pages: list[str], metadata: dict | None = None, *,
                     issuer_name: str = "") -> DocumentProfile:
    """The profile of a document from the text of its first pages (the cover and the next one
    name the issuer and the form; up to PROFILE_PAGES tell a quarter) and its PDF metadata;
    `issuer_name`: the issuer when the caller knows it better than the text (an OCR reading
    confirmed by the text layer). Never raises on odd input: unknown fields stay empty, with a
    note."""
    metadata = metadata or {}
    pages = [str(p or "").replace("\xa0", " ") for p in pages[:PROFILE_PAGES]]
    cover = "\n".join(pages[:COVER_PAGES])
    text = "\n".join(pages)
    lines = _lines(cover)
    notes: list[str] = []
    registrant, labelled = _registrant_name(lines)
    name = issuer_name or registrant or _with_suffix(_release_name(lines), text) \
        or _suffixed_name(lines) or _metadata_name(metadata)
    if labelled and not registrant and not issuer_name:
        notes.append("the cover's registrant name is not in its text layer")
    if not name:
        notes.append("no issuer name found on the first pages or in the metadata")
    issuer = tidy_name(name) if name else ""
    form = _form_type(lines, cover, metadata)
    year, period, end = _period(lines, cover, text, form, notes)
    ticker = _ticker(lines, cover)
    former = _former_names(_lines(text), text, issuer) if issuer else []
    aliases = short_forms(issuer) if issuer else []
    for old in former:
        aliases += [f for f in [old, *short_forms(old)] if f not in aliases]
    if ticker and ticker not in aliases:
        aliases.append(ticker)
    return DocumentProfile(issuer=issuer, aliases=tuple(aliases), ticker=ticker, form_type=form,
                           fiscal_year=year, fiscal_period=period, period_end=end,
                           notes=tuple(notes), dated=_dated(lines, cover, form, metadata),
                           former_names=tuple(former))


def ocr_page_text(page, dpi: int = 200, languages: str = "eng") -> str:
    """The text tesseract reads on a PyMuPDF page ("" when tesseract is missing or fails: a
    profile is never worth failing a document for)."""
    try:
        import numpy as np
        import pymupdf

        from h3.resources.models.tesseract import tesseract_output

        pix = page.get_pixmap(dpi=dpi, colorspace=pymupdf.csRGB, alpha=False)
        image = np.frombuffer(pix.samples, np.uint8).reshape(pix.h, pix.w, 3)
        return tesseract_output(image, languages)
    except Exception as exc:  # noqa: BLE001 - tesseract absent, a page that does not render
        logging.getLogger(__name__).warning("OCR of a cover page for its profile failed: %s",
                                            exc)
        return ""


def profile_pages(doc, max_pages: int = PROFILE_PAGES) -> list[str]:
    """The first pages' text a profile reads from an open PyMuPDF document: a page whose text
    layer is not `legible` is "" and the first page, when it is empty or illegible, is read by
    OCR (a scan, or fonts without a Unicode map)."""
    pages = []
    for i in range(min(max_pages, doc.page_count)):
        try:
            text = doc[i].get_text("text")
        except Exception:
            text = ""
        pages.append(text if legible(text) else "")
    if pages and not pages[0].strip():
        pages[0] = ocr_page_text(doc[0])
    return pages


def needs_cover_ocr(profile: DocumentProfile) -> bool:
    """Whether the first page should be read by OCR and profiled again: its text layer names no
    issuer, or its registrant name is an image (a logo above the cover's name label)."""
    return not profile.issuer or any("not in its text layer" in n for n in profile.notes)


def profile_pdf(path: str, max_pages: int = PROFILE_PAGES) -> DocumentProfile:
    """`profile_document` of a PDF file (its first pages, OCR where the first page's text layer
    is missing or illegible or names no issuer, and its metadata)."""
    import pymupdf

    with pymupdf.open(path) as doc:
        return profile_open_document(doc, max_pages)


def profile_open_document(doc, max_pages: int = PROFILE_PAGES,
                          pages: list[str] | None = None, ocr: bool = True) -> DocumentProfile:
    """`profile_pdf` of an open PyMuPDF document; `pages`: its first pages' text when the caller
    has read them already ("" for a page without a legible text layer); `ocr`: whether a cover
    page without legible text may be read by OCR (cold_storage.ocr_enabled at ingestion)."""
    metadata = dict(doc.metadata or {})
    if pages is None:
        pages = profile_pages(doc, max_pages)
    else:
        pages = [p if legible(p) else "" for p in pages[:max_pages]]
        if ocr and pages and not pages[0].strip() and doc.page_count:
            pages[0] = ocr_page_text(doc[0])
    profile = profile_document(pages, metadata)
    if ocr and needs_cover_ocr(profile) and doc.page_count and pages and pages[0].strip():
        # the text layer names no issuer, or not the cover's: OCR reads the name set as an image
        read = ocr_page_text(doc[0])
        again = profile_document([read, *pages[1:]], metadata) if read.strip() else profile
        if again.issuer and (not profile.issuer or not needs_cover_ocr(again)):
            name, how = _confirmed(again.issuer, pages)
            again = profile_document([read, *pages[1:]], metadata, issuer_name=name)
            return replace(again, notes=(*again.notes, f"issuer read by OCR ({how})"))
    return profile


def _confirmed(read: str, pages: list[str]) -> tuple[str, str]:
    """An issuer name OCR read on a cover (a script logo reads badly: "The Hcrlow Cnmpany"), checked
    against the company names the text layer writes: the same name, or the most similar one
    (difflib ratio >= MIN_OCR_NAME_SIMILARITY) in the text layer's spelling; else the reading.
    Returns (name, how it was confirmed)."""
    from difflib import SequenceMatcher

    def norm(name: str) -> str:
        return " ".join(re.sub(r"[^\w&]", " ", name.lower()).split())

    # the text layer's spelling of each name, mixed case before a shouted one
    found = sorted((m.group(1) for line in _lines("\n".join(pages)) if not _NOT_A_NAME.search(line)
                    for m in _NAME_IN_LINE.finditer(line) if _names_someone(m.group(1))),
                   key=lambda n: n.upper() == n)
    spelling: dict[str, str] = {}
    for n in found:
        spelling.setdefault(norm(n), tidy_name(n))
    names = set(spelling.values())
    if norm(read) in spelling:
        return spelling[norm(read)], "confirmed by the text layer"
    scored = sorted(((SequenceMatcher(None, norm(read), norm(n)).ratio(), n) for n in names),
                    reverse=True)
    if scored and scored[0][0] >= MIN_OCR_NAME_SIMILARITY:
        return scored[0][1], f"corrected to the text layer's {scored[0][1]!r}"
    return read, "not found in the text layer"
