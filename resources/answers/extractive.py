"""The extractive answer: the sentences and table rows of the recalled evidence that answer the
question, quoted verbatim (but for whitespace: a PDF line break inside a sentence is a space)
with their file, page and box.

Each hit is cut into candidates: prose into sentences (a period inside a number or after an
abbreviation does not end one, so "$1,577.0 million" and "Acme, Inc. (the Company)" stay whole,
and a PDF line that wraps a sentence is joined to its next), a table into its body rows,
each row read with its column headers ("Purchases of equipment: 2023 (1,577); 2022 (1,373)"),
a "$" or "%" cell glued to its figure. A statement that PDF text lays out one cell a line (a
label line, then its figure lines) is read as rows the same way (statement_rows).
A candidate scores by the question's content words it holds, each weighted by how rare it is
among the candidates (a word every sentence has decides nothing), plus a little for holding a
figure when the question asks for one, for naming a year the question names, and - for a table
row - for a line item that reports the metric the question names in other words (a question
about "capital expenditure" and the row "Purchases of property and equipment": METRIC_NAMES,
the usual names of financial-statement line items). A table row also matches the words of its
table's title, at half weight (the title is every row's). A question asking for a figure (a
metric, an amount) scores a candidate without one (a headline; a date is no figure) at half.
A table-of-contents entry (a dot leader to a page number) scores at TOC_SHARE: it names what
the question asks about and answers nothing. An all-capital word of the question also matches
the words it abbreviates ("CEO", "Chief Executive Officer"). The hit's own recall rank breaks
near ties.
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass

from h3.resources.recall.text import stems, word_stems

MAX_QUOTES = 3
KEEP_SHARE = 0.5  # quotes after the best must score at least this share of the best's score
MAX_QUOTE_CHARS = 400  # a longer sentence is cut around its matching words ("…" marks the cut)
FIGURE_BONUS = 0.15  # of the question's total word weight: a figure where one is asked for
YEAR_BONUS = 0.10  # a year the question names
RANK_BONUS = 0.2  # the first recalled hit (recall ranks the evidence page first most often); later ones less, linearly
MAX_LABEL_CHARS = 120  # a statement line item's label is no longer than this
LINE_ITEM_BONUS = 0.25  # a table row reporting the metric the question names in other words
# A table row's title words (its `context`) weigh this share of a word the row itself holds: the
# title is every row's, so it says which table, not which row (a release's title "Acme Reports
# First Quarter Results" made each comparable-sales row of its table outrank the net sales
# sentence a question about first-quarter net sales asked for)
CONTEXT_SHARE = 0.5
# A candidate from a filing that cannot report the year the question names (recall's
# `off_period`: an FY2022 10-K for an FY2015 question) keeps this share of its score unless its
# own text names that year: the same line item of another year is the wrong figure, however
# well its words match (the same share as a contents entry's: quoted only when nothing else is)
OFF_PERIOD_SHARE = 0.3
# A table-of-contents entry ("3.2.2 Built-in global variables . . . . . . 11") holds a heading's
# words and points at the page that answers: it keeps this share of its score, so the passage
# under that heading, when recalled too, is quoted first. An entry: a dot leader (five dots or
# more, spaced or not: no ellipsis) that ends the line or leads to a page number alone. A
# statement's dot leader leads to figures ("Net sales . . . . $ 32,765  $ 30,512"): not one.
TOC_SHARE = 0.3
_TOC_ENTRY = re.compile(r"(?:\.[ \t]?){5,}[ \t]*(?:\d{1,4}|[ivxlcdm]{1,7})?[ \t]*$",
                        re.IGNORECASE | re.MULTILINE)
# A question that asks for a figure: a candidate holding none (a press release's headline that
# repeats the question's words) keeps this share of its score
NO_FIGURE_SHARE = 0.5

# The names financial statements give one metric (US GAAP and IFRS wording): a question uses one,
# the row that reports it another. Lower case; a name matches at word starts.
METRIC_NAMES: tuple[tuple[str, ...], ...] = (
    ("capital expenditure", "capex", "purchases of property", "additions to property",
     "payments for property", "purchase of property", "capital spending"),
    ("revenue", "net sales", "total sales", "turnover"),
    ("net income", "net earnings", "net profit", "profit for the year"),
    ("cost of goods sold", "cost of sales", "cost of revenue", "cogs"),
    ("operating income", "operating profit", "income from operations"),
    ("pp&e", "property, plant and equipment", "property and equipment", "fixed assets"),
    ("dividends", "dividends paid", "cash dividends"),
    ("share repurchases", "repurchases of common stock", "purchases of treasury stock",
     "buybacks"),
    ("operating cash flow", "cash provided by operating activities",
     "cash from operating activities", "cash generated from operations"),
    ("inventory", "inventories"),
    ("accounts receivable", "trade receivables", "receivables"),
    ("accounts payable", "trade payables"),
    ("shareholders' equity", "stockholders' equity", "total equity"),
    ("depreciation and amortization", "d&a"),
)
_METRICS = [re.compile("|".join(r"(?<![a-z])" + re.escape(n) for n in group))
            for group in METRIC_NAMES]

# A sentence ends at . ! ? followed by space and a capital, digit, quote or bracket; a line
# break ends one too (headings, list items).
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"“(\[$])|\n+")
_FIGURE = re.compile(r"\d[\d,]*(?:\.\d+)?")
_YEAR = re.compile(r"(?<!\d)(?:19|20)\d\d(?!\d)")  # FY2018 too
# what is no reported figure though it holds digits: a date ("July 31, 2023"), a period or part
# label ("Q1", "FY24", "Item 7"); a headline's "ended July 31, 2023" read as the figure asked for
_NOT_FIGURE = re.compile(
    r"\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?\s+\d{1,2}\b(?:,?\s*\d{4})?"
    r"|\b(?:item|note|part|section|table|page)\s+\d+[a-z]?\b|(?<=[a-z])\d+", re.I)
# what asks for a figure: "how much/many", a unit, a ratio, a change (English, not one corpus's)
_ASKS_FIGURE = re.compile(
    r"\bhow (?:much|many)\b|\b(?:amount|total|number|ratio|margin|rate|percent(?:age)?|share|"
    r"growth|change|increase|decrease|average|million|billion|thousand|value|cost|price|"
    # the metrics a filing reports as figures
    r"revenue|sale|income|earning|profit|eps|fee|dividend|expense|guidance)s?\b|%|\$",
    re.I)


@dataclass(slots=True)
class Candidate:
    text: str  # what is quoted
    hit: dict
    rank: int  # the hit's position in the recalled list
    kind: str  # "sentence" | "table_row"
    context: str = ""  # a table row's title lines: matched, not quoted


def table_title(text: str) -> str:
    """The lines of a table chunk above its grid (title, section)."""
    return " ".join(ln.strip() for ln in text.splitlines() if ln.strip() and
                    not ln.strip().startswith("|"))


# a cell or line that is only a figure, or a unit glued to one: "$", "5,363", "(1,577)", "14.8 %",
# "—" (a nil figure); a statement laid out one cell a line is a label line followed by these
# (a scale word may follow the figure: an earnings release's summary lists "$3.7 billion")
_FIGURE_CELL = re.compile(r"\(?\$?\s*\(?-?\d[\d,]*(?:\.\d+)?(?:\s*(?i:million|billion|thousand|trillion))?"
                          r"\)?\s*%?\)?|[$%)(]|[—–-]{1,2}")
_YEARS_CELL = re.compile(r"(?:(?:fy|fiscal|year|december|june|september|march)[^\d]{0,12})?"
                         r"(?:19|20)\d\d", re.I)


def _figure(cell: str) -> bool:
    return bool(_FIGURE_CELL.fullmatch(cell.strip())) and not _YEARS_CELL.fullmatch(cell.strip())


def _glue_units(cells: list[str]) -> list[str]:
    """Cells with a lone "$" or "(" joined to the figure after them, a lone "%" or ")" to the one
    before: "$ | 5,363" -> "$5,363", "14.8 | %" -> "14.8%" (a figure is quoted with its unit)."""
    out: list[str] = []
    pending = ""
    for cell in cells:
        c = cell.strip()
        if c in ("$", "(", "$(", "($"):
            pending += c
            continue
        if not c:  # an empty cell between "$" and its figure
            out.append("")
            continue
        if c in ("%", ")", "%)") and out and out[-1]:
            out[-1] += c
            out.append("")  # keep the column count (headers are zipped by position)
            continue
        out.append(pending + c)
        pending = ""
    return out


def _row_text(label: str, values: list[str], heads: list[str]) -> str:
    """"label: head value; head value" (heads when one per value, else values alone)."""
    if len(heads) != len(values):
        heads = [""] * len(values)
    parts = [f"{h} {v}".strip() for h, v in zip(heads, values, strict=True)]
    return f"{label}: " + "; ".join(parts) if label else "; ".join(parts)


def table_rows(text: str) -> list[str] | None:
    """A markdown table chunk's body rows read with their column headers, or None for prose.
    The lines above the table (its title, the section) are not rows; the |---| line and the
    header are folded into each row. A header row that is itself a line item with figures
    ("| Total assets | $ | 83,402 |") is a row too; its figures are no column heads. A table
    of one column (a statement laid out one cell a row) is read as statement lines."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    grid = [ln for ln in lines if ln.startswith("|")]
    if len(grid) < 3 or not any(set(ln) <= set("|-: ") for ln in grid):
        return None
    cells = [_glue_units([c.strip() for c in ln.strip("|").split("|")]) for ln in grid]
    rule = next(i for i, ln in enumerate(grid) if set(ln) <= set("|-: "))
    body = [r for r in cells[rule + 1:]]
    if max(len([c for c in r if c]) for r in cells) <= 1:  # one cell a row
        return statement_rows([c for i, r in enumerate(cells) if i != rule for c in r if c])[0]
    heads: list[str] = []
    for row in cells[:rule]:
        if any(_figure(c) for c in row[1:] if c):  # a data row in the header's place
            body.insert(0, row)
        else:
            heads = [h for h in row[1:] if h] or heads
    rows = []
    for row in body:
        label, values = row[0], [v for v in row[1:] if v]
        if not values:
            continue
        rows.append(_row_text(label, values, heads))
    return rows


def statement_rows(lines: list[str]) -> tuple[list[str], set[int]]:
    """Statement lines laid out one cell a line (PDF text, one-column tables): each label line
    followed by its figure lines, read as one row "label: 2018 $5,363; 2017 $4,869" (the
    column heads: the last run of year lines before it, when one per figure). Also the indices
    of the lines the rows were made of."""
    rows: list[str] = []
    used: set[int] = set()
    heads: list[str] = []
    years: list[str] = []
    label, at, values = "", -1, []

    def flush() -> None:
        glued = [v for v in _glue_units(values) if v]
        # one bare small number after a line is a page number or a note mark, not a figure
        lone = len(glued) == 1 and re.fullmatch(r"\d{1,3}", glued[0])
        if label and glued and not lone and any(ch.isdigit() for v in glued for ch in v):
            rows.append(_row_text(label, glued, heads))
            used.update(range(at, at + 1 + len(values)))

    for i, line in enumerate(lines):
        cell = line.strip()
        if _YEARS_CELL.fullmatch(cell):
            years.append(cell)
            continue
        if years:
            heads, years = years, []
        if _figure(cell) and label:
            values.append(cell)
            continue
        flush()
        # a line item's label is short and no sentence's end (prose lines are not labels)
        is_label = not _figure(cell) and len(cell) <= MAX_LABEL_CHARS and not cell.endswith(".")
        label, at, values = (cell, i, []) if is_label else ("", -1, [])
    flush()
    return rows, used


# A PDF line that wraps a sentence: a line of prose (WRAPPED_MIN_WORDS at least: no table cell
# or heading) that the next line goes on in lower case, or that ends inside a phrase (a comma,
# a bracket, a joining word). Cut there, a quote was a fragment ("... improve operating" /
# "margins, and ...").
WRAPPED_MIN_WORDS = 6
_JOINING_END = re.compile(r"(?:[,(&]|\b(?:and|or|of|the|to|in|for|by|with|a|an|at|on))$")


def _unwrap(text: str) -> str:
    """`text` with each wrapped line joined to the line it continues (see _JOINING_END)."""
    out: list[str] = []
    for line in text.split("\n"):
        prev, nxt = (out[-1].rstrip() if out else ""), line.strip()
        if len(prev.split()) >= WRAPPED_MIN_WORDS and nxt and (
                (nxt[0].islower() and prev[-1] not in ".!?:;") or _JOINING_END.search(prev)):
            out[-1] = f"{prev} {nxt}"
        else:
            out.append(line)
    return "\n".join(out)


# Abbreviations whose period ends no sentence ("Acme, Inc. (the “Company”) announced ...")
_ABBREVIATION = re.compile(r"(?:\b(?:Inc|Corp|Co|Ltd|Bros|No|Nos|Mr|Mrs|Ms|Dr|Jr|Sr|St|vs|"
                           r"approx|Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sept?|Oct|Nov|Dec)"
                           r"|(?<![\w.])[A-Z](?:\.[A-Z])*)\.$")


def sentences(text: str) -> list[str]:
    """Prose cut into sentences (numbers, wrapped lines and abbreviations kept whole), blanks
    dropped."""
    flat = _unwrap(re.sub(r"[ \t]+", " ", text))
    out: list[str] = []
    start = 0
    for m in _SENTENCE_END.finditer(flat):
        if "\n" not in m.group(0) and _ABBREVIATION.search(flat[start:m.start()]):
            continue  # "Inc. (the", "U.S. Bank": the sentence goes on
        out.append(flat[start:m.start()])
        start = m.end()
    out.append(flat[start:])
    return [s.strip() for s in out if len(s.strip()) > 3]


def passages(hit: dict) -> list[dict]:
    """A recalled hit and its page's other matched chunks (`passages`: recall merges a page's
    hits into its best one), each as a hit of its own box and text."""
    return [hit] + [{**hit, "bbox": p["bbox"], "text": p["text"], "passages": []}
                    for p in hit.get("passages") or ()]


def candidates(hits: list[dict]) -> list[Candidate]:
    out = []
    for rank, hit in ((rank, piece) for rank, whole in enumerate(hits)
                      for piece in passages(whole)):
        text = hit.get("text") or ""
        rows = table_rows(text)
        if rows:
            title = table_title(text)
            out.extend(Candidate(r, hit, rank, "table_row", title) for r in rows)
            continue
        if rows is not None:
            # a grid without one row of figures: prose that layout boxed as a one-column table
            # (a press release's paragraph), or a header block; its cells read as lines, else
            # none of its words could be quoted
            text = _grid_as_lines(text)
        lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
        rows, used = statement_rows(lines)
        if rows:  # a statement in prose's clothes: its rows, and the sentences of the rest
            title = " ".join(lines[:3])
            out.extend(Candidate(r, hit, rank, "table_row", title) for r in rows)
            text = "\n".join(ln for i, ln in enumerate(lines) if i not in used)
        out.extend(Candidate(s, hit, rank, "sentence") for s in sentences(text))
    return out


def _grid_as_lines(text: str) -> str:
    """A markdown table chunk as plain lines: its rule line dropped, each row's cells joined."""
    out = []
    for line in text.splitlines():
        cells = line.strip()
        if cells.startswith("|"):
            if set(cells) <= set("|-: "):
                continue
            cells = " ".join(c.strip() for c in cells.strip("|").split("|") if c.strip())
        out.append(cells)
    return "\n".join(out)


def _cut(text: str, wanted: set[str]) -> str:
    """A long sentence cut to MAX_QUOTE_CHARS around its first matching word."""
    if len(text) <= MAX_QUOTE_CHARS:
        return text
    first = next((m.start() for m in re.finditer(r"\w+", text) if stems(m.group(0)) & wanted), 0)
    a = max(0, first - MAX_QUOTE_CHARS // 3)
    b = min(len(text), a + MAX_QUOTE_CHARS)
    return ("…" if a else "") + text[a:b].strip() + ("…" if b < len(text) else "")


def _same_word(a: str, b: str) -> bool:
    """Whether two words of one 5-letter stem are one word: they agree beyond the stem (or the
    shorter word ends there). The stem alone joined "company" and "comparison", so a manual's
    "Table 2-2 Comparison ..." answered "What was the Company's revenue?" instead of a refusal;
    "companies", "auditor" / "audit" and "operating" / "operations" still match."""
    return len(os.path.commonprefix([a, b])) >= min(6, len(a), len(b))


def _matched(wanted: dict[str, set[str]], text: str,
             spelled: dict[str, re.Pattern] | None = None) -> set[str]:
    """The question's stems (`wanted`, from word_stems) that `text` holds as the same word, or
    (`spelled`: acronym_forms) as the words an acronym of the question stands for."""
    have = word_stems(text)
    return {t for t, words in wanted.items()
            if t in have and any(_same_word(a, b) for a in words for b in have[t])} | {
        t for t, form in (spelled or {}).items() if form.search(text)}


def acronym_forms(question: str) -> dict[str, re.Pattern]:
    """The question's all-capital words of 2-5 letters, each as the capitalised words it may
    stand for (stem -> pattern): "CEO" finds "Chief Executive Officer", "GMV" "Gross
    Merchandise Volume" (a filing spells out what a question abbreviates; "and", "of", "&" may
    sit between the words)."""
    out = {}
    for word in set(re.findall(r"\b[A-Z]{2,5}\b", question)):
        joiner = r"[\w'’-]*\s+(?:(?:and|of|for|&)\s+)?"
        out[stems(word).pop() if stems(word) else word.lower()] = re.compile(
            r"\b" + joiner.join(word) + r"[\w'’-]*")
    return out


def score_candidates(question: str, pool: list[Candidate],
                     off_period: frozenset[str] = frozenset()) -> list[tuple[float, Candidate]]:
    """(score, candidate), best first; 0 for a candidate sharing no content word. `off_period`:
    the doc ids of filings that cannot report the year the question names (OFF_PERIOD_SHARE)."""
    wanted_words = word_stems(question)
    wanted = set(wanted_words)
    if not pool or not wanted:
        return []
    spelled = acronym_forms(question)
    own = [_matched(wanted_words, c.text, spelled) for c in pool]
    titled = [_matched(wanted_words, c.context, spelled) - o
              for c, o in zip(pool, own, strict=True)]
    have = [o | t for o, t in zip(own, titled, strict=True)]
    df = {t: sum(t in h for h in have) for t in wanted}
    idf = {t: math.log(1 + len(pool) / (1 + n)) for t, n in df.items()}
    total = sum(idf.values())  # words no candidate has weigh most: a share of 1 holds them all
    years = set(_YEAR.findall(question))
    metrics = [m for m in _METRICS if m.search(question.lower())]
    asks_figure = bool(_ASKS_FIGURE.search(question)) or bool(metrics)
    last = max(c.rank for c in pool) or 1
    scored = []
    for cand, o, t in zip(pool, own, titled, strict=True):
        words = (sum(idf[w] for w in o) + CONTEXT_SHARE * sum(idf[w] for w in t)) / total
        label = cand.text.split(":", 1)[0] if cand.kind == "table_row" else ""
        line_item = bool(label) and any(m.search(label.lower()) for m in metrics)
        if words == 0.0 and not line_item:
            scored.append((0.0, cand))
            continue
        figures = [f for f in _FIGURE.findall(_NOT_FIGURE.sub(" ", cand.text))
                   if not _YEAR.fullmatch(f)]
        bonus = FIGURE_BONUS * (asks_figure and bool(figures))
        bonus += YEAR_BONUS * bool(years & set(_YEAR.findall(cand.text)))
        bonus += RANK_BONUS * (1 - cand.rank / last)
        bonus += LINE_ITEM_BONUS * line_item
        share = NO_FIGURE_SHARE if asks_figure and not figures else 1.0
        if contents_entry(cand.text):
            share *= TOC_SHARE
        if cand.hit.get("doc_id") in off_period and not years & set(_YEAR.findall(cand.text)):
            share *= OFF_PERIOD_SHARE
        scored.append(((words + bonus) * share, cand))
    scored.sort(key=lambda sc: (-sc[0], sc[1].rank))
    return scored


def contents_entry(text: str) -> bool:
    """Whether `text` holds a table-of-contents entry (a dot leader to a page number)."""
    return bool(_TOC_ENTRY.search(text))


def quote(cand: Candidate, wanted: set[str]) -> dict:
    hit = cand.hit
    return {"text": _cut(cand.text, wanted), "doc_id": hit.get("doc_id"),
            "source": hit.get("source"), "page": int(hit.get("page") or 0),
            "bbox": list(hit.get("bbox") or []), "kind": cand.kind}


def extract(question: str, hits: list[dict], max_quotes: int = MAX_QUOTES,
            off_period: frozenset[str] = frozenset()) -> list[dict]:
    """The quotes that answer `question` best, best first (empty: nothing shares a word).
    `off_period`: as score_candidates takes it (recall's routing names them)."""
    scored = [sc for sc in score_candidates(question, candidates(hits), off_period)
              if sc[0] > 0]
    if not scored:
        return []
    best = scored[0][0]
    wanted = stems(question)
    quotes: list[dict] = []
    seen: set[str] = set()
    for score, cand in scored:
        if score < KEEP_SHARE * best or len(quotes) == max_quotes:
            break
        if cand.text in seen:  # the same row in two overlapping chunks
            continue
        seen.add(cand.text)
        quotes.append(quote(cand, wanted))
    return quotes
