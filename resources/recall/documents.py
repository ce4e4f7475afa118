"""Documents first: which documents a query is about, as a prior on its chunks, never a filter.

Every query searches the whole store. A query that names a company (its name, a short form,
a former name, initials or ticker, or a slip of them: the issuer registry of
resources/recall/companies.py, built from the document profiles of resources/nlp/issuer.py)
gives that company's filings a prior; the filing of the period it names ("FY2022", "fiscal
2022", "Q3 2024", "the first quarter") and of the form it names ("10-K", "8-K", "earnings
release") gains more. Text recall adds the prior to its chunks' scores, so a named company's
pages rise over others' alike, and a much better page elsewhere still wins. A query naming a
period and no company gives that period's filings half the prior. When a query seems to name a
company the registry does not know, the result carries a note saying so.

`--mode documents` (ranking whole documents by their pages' evidence) is
resources/recall/document_ranking.py.
"""

from __future__ import annotations

import json
import logging
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from h3.resources.nlp.issuer import (
    PROFILE_VERSION,
    QUARTER_RE,
    QUARTER_WORDS,
    DocumentProfile,
    profile_pdf,
)
from h3.resources.recall.companies import IssuerRegistry, registry_from
from h3.resources.recall.router import RecallContext
from h3.resources.recall.saved import read_saved, save

log = logging.getLogger(__name__)
# a data cache, not a client: the profile (issuer, period) of a document stored before profiles
# were kept in its metadata, read from its PDF once per process rather than once per query
_PROFILE_CACHE: dict[tuple[str, str], DocumentProfile] = {}
_LOCK = threading.Lock()
_YEAR = re.compile(r"\b(?:FY|fiscal(?:\s+year)?\s*|F)?'?((?:19|20)\d{2})\b", re.IGNORECASE)
# Words that look like names in a question but are not companies: standard finance acronyms,
# period labels and question words. (Capitalised words that open a sentence are skipped by
# position, so imperatives such as "Give ..." or "Using ..." need no list; an acronym the
# question spells out, "days sales outstanding (DSO)", is skipped by its initials.)
_NOT_COMPANY = re.compile(r"^(?:FY\d*|Q[1-4]|H[12]|USD|EUR|GBP|JPY|CNY|GAAP|IFRS|EBITDA?|EPS|SEC|"
                          r"CEO|CFO|COO|CTO|CAPEX|COGS|OPEX|SG&A|R&D|PP&E|ROA|ROE|ROIC|YoY|QoQ|"
                          r"TTM|LTM|FCF|What|Who|How|Which|When|Where|Why|Is|Are|"
                          r"Does|Do|Did|Has|Have|Was|Were|Can|Could|Should|Would|Will|The|A|An|"
                          r"In|On|Of|For|If|We|Our|I|It|Its|This|That|These|Those|"
                          # a date's words ("as of June 30, 2023", "for March 2023")
                          r"January|February|March|April|May|June|July|August|September|"
                          r"October|November|December|Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sept?|Oct|"
                          r"Nov|Dec|Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday)$")
# Words a question capitalises that are no company on their own: a filing's parts ("Item 7",
# "Note 12", "Table 3"), the filer's name for itself ("the Company's revenue", "the Group's
# debt") and statement line items ("Net Income", "Total Assets"). A candidate made only of
# these (and the numbers or letters of a part) is not taken for a company: it made `h3 ask`
# refuse ordinary questions such as "What was the Company's revenue?" as "no document is from
# 'Company'". A name with one other word ("Capital One", "Bank of America" -> "America") stays.
_GENERIC_WORDS = frozenset("""
    table tables figure fig section note notes item items part page exhibit chapter appendix
    schedule equation chart line column row statement statements
    company group registrant corporation bank fund trust partnership firm issuer entity
    business management board directors committee subsidiary subsidiaries parent
    revenue revenues sales income net gross operating total assets asset liabilities
    liability equity expense expenses cost costs cash flow flows free profit profits margin
    margins earnings debt capital goodwill dividend dividends loss losses inventory
    inventories receivable receivables payable payables depreciation amortization interest
    tax taxes share shares stock stockholders shareholders current expenditure expenditures
    working balance sheet comprehensive retained other accounts property plant equipment
    intangible intangibles lease leases segment segments backlog guidance outlook risk factors
""".split())
# a part's number or letter after a generic word: "7", "1A", "99.1", "II", "B"
_PART_ID = re.compile(r"\d[\w.]*|[IVXLC]+|[A-Z]")


def _generic(words: list[str]) -> bool:
    """Whether a candidate name is only generic words (_GENERIC_WORDS) and part ids."""
    plain = [w.strip(".,()'’").lower() for w in words]
    plain = [w[:-2] if w.endswith(("'s", "’s")) else w for w in plain]
    return (any(w in _GENERIC_WORDS for w in plain)
            and all(w in _GENERIC_WORDS or _PART_ID.fullmatch(o.strip(".,()"))
                    for w, o in zip(plain, words, strict=True)))


def core_name(name: str) -> str:
    """A candidate name without its generic words ("Newco Holdings Revenue" -> "Newco
    Holdings"): what a document's text must hold for it to be about that name."""
    return " ".join(w for w in name.split() if w.strip(".,()'’").lower() not in _GENERIC_WORDS)


# A name's word: it begins a word, since a capital inside one ("iPhone's", "xTrade") is no name
# of its own (it read as an absent company 'Phone' and `h3 ask` refused the question); an
# apostrophe inside it joins two letters' worth ("O'Malley", "L'Oreal"), never a possessive's "'s"
_NAME_WORD = r"[A-Z](?:[\w&.-]|['’](?=[A-Za-z]{2}))*"
_CANDIDATE_NAME = re.compile(
    r"(?:\b(?i:for|of|at|by|from|about|does|did|is|has|was|were|are)\s+)"
    rf"((?:{_NAME_WORD}|\d+[A-Z][\w&]*)(?:\s+(?:{_NAME_WORD}|&))*)"
    rf"|(?<![\w&.'’-])((?:{_NAME_WORD}|\d+[A-Z][\w&]*)(?:\s+{_NAME_WORD})*)(?:'s|’s)\b")


# How much a document's prior adds to a chunk's rerank score (which lies in about [0, 1]): a
# named company's filings rise above other companies' similar pages, the filing of the named
# period and form above the company's others; a much better page elsewhere still wins.
COMPANY_PRIOR = 0.30
PERIOD_PRIOR = 0.30
FORM_PRIOR = 0.06
# No period named: the company's latest filing gains up to this much (it says what holds now).
RECENCY_PRIOR = 0.03
# A query naming a period but no company: the period's filings get this share of the prior
# (many companies file for one year; the period is weaker evidence than a name).
PERIOD_ONLY_SHARE = 0.5
# How many preferred documents are also searched on their own, so their chunks reach the pool
# even when other documents fill the corpus-wide search.
PREFERRED_SEARCHED = 8
# How a routing note that names a company the corpus lacks begins (`h3 ask` refuses on it).
ABSENT_COMPANY_NOTE = "no document in the corpus is from"

# The forms a query can ask for by name, as profiles write them.
_FORM_WORDS: tuple[tuple[str, re.Pattern], ...] = (
    ("10-K", re.compile(r"\b10-?K\b|\bannual\s+report\b", re.IGNORECASE)),
    ("10-Q", re.compile(r"\b10-?Q\b|\bquarterly\s+report\b", re.IGNORECASE)),
    ("8-K", re.compile(r"\b8-?K\b|\bcurrent\s+report\b", re.IGNORECASE)),
    ("earnings release", re.compile(r"\bearnings\s+(?:release|report|announcement)\b|"
                                    r"\bpress\s+release\b|\bresults\s+release\b",
                                    re.IGNORECASE)),
    ("press release", re.compile(r"\bpress\s+release\b|\bnews\s+release\b",
                                 re.IGNORECASE)),
    ("20-F", re.compile(r"\b20-?F\b", re.IGNORECASE)),
)
_QUARTER_ONLY = re.compile(r"\b(first|second|third|fourth)[\s-]+quarter\b|\bQ([1-4])\b",
                           re.IGNORECASE)


@dataclass
class Routing:
    """Which documents a query is about: a prior, never a filter. `doc_ids`: the preferred
    documents, best first (the named company's filings, or with no company named those of the
    named period; None: no preference); `scores`: every preferred document's prior, added to
    its chunks' scores by text recall; `by`: why (company | company+period | period | all)."""

    doc_ids: list[str] | None
    scores: dict[str, float] = field(default_factory=dict)
    by: str = "all"
    note: str | None = None
    named: list[str] = field(default_factory=list)  # the company forms the query used
    # names the query uses that no document is from: `absent` the corpus never mentions,
    # `mentioned` it does (a segment, product or counterparty: mentions.py); `h3 ask` answers
    # a question naming one only from evidence that mentions it
    absent: list[str] = field(default_factory=list)
    mentioned: list[str] = field(default_factory=list)
    # organisations the corpus only mentions that a query naming no stored company is about
    # (`h3 ask` refuses: the evidence would be another company's words about it)
    about: list[str] = field(default_factory=list)
    # stored documents whose fiscal year cannot report the years the query names
    # (`off_period_documents`: `h3 ask` quotes them last)
    off_period: list[str] = field(default_factory=list)


def _is_current(profile_json: dict | None) -> bool:
    """Whether a stored profile was written by this version of the profiler."""
    return bool(profile_json) and profile_json.get("version", 1) >= PROFILE_VERSION


def document_profiles(ctx: RecallContext) -> dict[str, DocumentProfile]:
    """doc_id -> profile for every ok document: stored at ingestion in the documents row's
    metadata (key `profile`). A document stored before profiles existed, or profiled by an
    older version of the profiler (PROFILE_VERSION), is profiled again from its file, once:
    the result is kept beside the store (PROFILE_CACHE_FILE; the documents rows are not
    rewritten, so nothing stored can be lost on the way)."""
    cached = ctx.cache.get("_profiles")
    if cached is not None:
        return cached
    rows = ctx.store.rows("documents", "status = 'ok'", ["doc_id", "source", "metadata_json"])
    out: dict[str, DocumentProfile] = {}
    refreshed = _read_profile_cache(ctx.store)
    dirty = False
    for row in rows:
        stored = json.loads(row.get("metadata_json") or "{}").get("profile")
        current = next((p for p in (stored, refreshed.get(row["doc_id"])) if _is_current(p)),
                       None)
        if current is not None:
            out[row["doc_id"]] = DocumentProfile.from_json(current)
            continue
        key = (row["doc_id"], row.get("source") or "")
        with _LOCK:
            profile = _PROFILE_CACHE.get(key)
        if profile is None:
            profile = current_profile(stored, row["source"] or "")
            with _LOCK:
                _PROFILE_CACHE[key] = profile
        out[row["doc_id"]] = profile
        refreshed[row["doc_id"]] = profile.to_json()
        dirty = True
    if dirty:
        _write_profile_cache(ctx.store, refreshed)
    ctx.cache["_profiles"] = out
    return out


PROFILE_CACHE_FILE = "profiles_refreshed.json"  # beside the store's folder


def _profile_cache_path(store) -> Path | None:
    path = getattr(store, "path", None)
    return Path(path).parent / PROFILE_CACHE_FILE if path else None


def _read_profile_cache(store) -> dict[str, dict]:
    return read_saved(_profile_cache_path(store)) or {}


def _write_profile_cache(store, profiles: dict[str, dict]) -> None:
    save(_profile_cache_path(store), profiles)  # a read-only store profiles again next time


def current_profile(stored: dict | None, source: str) -> DocumentProfile:
    """A document's profile by the current profiler: the stored one when it is current, else
    read again from the document's file; the stored one when the file is gone or unreadable
    (it routes less well, but it routes)."""
    old = DocumentProfile.from_json(stored) if stored else DocumentProfile()
    if _is_current(stored) or not Path(source).is_file():
        return old
    import pymupdf

    try:
        return profile_pdf(source)
    # an unreadable file (gone, replaced, damaged: MuPDF's errors, OCR's), not a bug: one
    # unreadable old file must not stop recall
    except (OSError, RuntimeError, ValueError, pymupdf.mupdf.FzErrorBase) as exc:
        log.warning("re-profiling %s failed (%s): its stored profile is used", source, exc)
        return old


def issuer_registry(ctx: RecallContext) -> IssuerRegistry:
    """The companies of the ok documents (resources/recall/companies.py), once per context."""
    if "_registry" not in ctx.cache:
        ctx.cache["_registry"] = registry_from(document_profiles(ctx), ctx.ok_doc_ids)
    return ctx.cache["_registry"]


def named_forms(query: str, profile: DocumentProfile) -> list[str]:
    """The forms of one profile's issuer that the query names (see companies.py for how)."""
    return [m.form for m in IssuerRegistry({"doc": profile}).match(query)]


def query_years(query: str) -> set[int]:
    return {int(m.group(1)) for m in _YEAR.finditer(query)}


def query_quarters(query: str) -> set[str]:
    """Quarter labels the query names, as profiles write them: "Q3 2024" for "third quarter
    of 2024", "Q3 FY24", "Q3 2024"; a quarter named without a year ("the first quarter") as
    "Q1" alone."""
    out = set()
    for m in QUARTER_RE.finditer(query):
        if m.group(1) and m.group(2):
            out.add(f"Q{QUARTER_WORDS[m.group(1).lower()]} {m.group(2)}")
        elif m.group(3):
            year = m.group(4) if len(m.group(4)) == 4 else f"20{m.group(4)}"
            out.add(f"Q{m.group(3)} {year}")
    if not out:
        for m in _QUARTER_ONLY.finditer(query):
            out.add(f"Q{QUARTER_WORDS[m.group(1).lower()]}" if m.group(1) else f"Q{m.group(2)}")
    return out


def query_forms(query: str) -> set[str]:
    """The filing forms a query asks for by name ("10-K", "earnings release", ...)."""
    return {form for form, words in _FORM_WORDS if words.search(query)}


def named_years(years: set[int], quarters: set[str]) -> set[int]:
    """The years a query names, its quarters' years ("Q3 2024") included."""
    return years | {int(q.split()[1]) for q in quarters if " " in q}


def period_match(profile: DocumentProfile, years: set[int], quarters: set[str]) -> float:
    """How well a document's period fits the one a query names, in [0, 1]: the named quarter
    (or, with no quarter named, the annual filing of the latest fiscal year named) 1.0; another
    filing of a named fiscal year 0.5; else 0."""
    period = profile.fiscal_period or ""
    if quarters:
        if period in quarters or any(" " not in q and period.startswith(q + " ") and (
                not years or profile.fiscal_year in years) for q in quarters):
            return 1.0
        return 0.5 if profile.fiscal_year in named_years(years, quarters) else 0.0
    if profile.fiscal_year not in years:
        return 0.0
    # several years named ("FY2022 compared to FY2021"): the latest year's annual filing
    # reports the earlier ones beside it (a 10-K's comparative columns), so it fits best
    if period.startswith("Q") or profile.fiscal_year != max(years):
        return 0.5
    return 1.0


# A filing reports its own fiscal year beside up to two earlier ones (an income statement's
# three columns), and its outlook speaks of the next one ("production rates we expect in
# 2023" in a 2022 10-K): other filings cannot hold a named year's figures.
COMPARATIVE_YEARS = 2
OUTLOOK_YEARS = 1


def off_period_documents(ctx: RecallContext, query: str, doc_ids: list[str]) -> list[str]:
    """Of `doc_ids`, those whose profiled fiscal year cannot report the years the query names
    (its quarters' years included): more than OUTLOOK_YEARS before the earliest, or more than
    COMPARATIVE_YEARS after the latest. A document whose year is unknown is never off period;
    a query that names no year has none."""
    years = named_years(query_years(query), query_quarters(query))
    if not years:
        return []
    profiles = document_profiles(ctx)
    first, last = min(years) - OUTLOOK_YEARS, max(years) + COMPARATIVE_YEARS
    return [d for d in dict.fromkeys(doc_ids)
            if (p := profiles.get(d)) is not None and p.fiscal_year is not None
            and not first <= p.fiscal_year <= last]


def _spelled_out(word: str, query: str) -> bool:
    """Whether an all-capital word of 2-6 letters is an acronym the question spells out: its
    letters begin consecutive words of the rest of the question ("days payable outstanding
    (DPO)", "free cash flow (FCF)")."""
    if not re.fullmatch(r"[A-Z]{2,6}", word):
        return False
    rest = re.sub(r"\b" + word + r"\b", " ", query)
    return word in "".join(w[0] for w in re.findall(r"[A-Za-z][\w'’-]*", rest)).upper()


def unknown_company(query: str, registry: IssuerRegistry | None = None) -> str | None:
    """A name the query seems to ask about ("... for Tesla", "Tesla's ...") that no company of
    the registry answers to, or None. A capitalised word opening a sentence is not taken for
    a name on its own (it is capitalised by position)."""
    return next(unknown_companies(query, registry), None)


# "X (formerly known as Y)", "X, previously Y", "X (now Y)", "X (f/k/a Y)": two names of one
# company, which the question itself says are one
_ALIAS = (r"[\s,(]*(?:formerly|previously|now|f/k/a|n/k/a|renamed|later)"
          r"(?:\s+(?:known\s+as|called|named|as))?\s+")


def aliased(query: str, name: str, other: str) -> bool:
    """Whether the query joins `name` and `other` by an alias phrase, either way round."""
    a, b = re.escape(name), re.escape(other)
    return bool(re.search(f"{a}(?:'s|’s)?{_ALIAS}{b}|{b}(?:'s|’s)?{_ALIAS}{a}", query, re.I))


def alias_in(query: str, name: str) -> str | None:
    """The other name the query gives `name` by an alias phrase, either way round ("Block's
    (formerly known as Square)" -> "Square"), or None."""
    other = r"([A-Z][\w&.-]*(?:\s+[A-Z][\w&.-]*)*)"
    n = re.escape(name)
    m = (re.search(f"{n}(?:'s|’s)?{_ALIAS}{other}", query)
         or re.search(f"{other}(?:'s|’s)?{_ALIAS}{n}", query))
    return m.group(1) if m else None


def unknown_companies(query: str, registry: IssuerRegistry | None = None) -> Iterator[str]:
    """Every name of unknown_company, in the order the query gives them."""
    starts = {0} | {m.end() for m in re.finditer(r"[.?!:;]\s+", query)}
    for m in _CANDIDATE_NAME.finditer(query):
        group = 1 if m.group(1) else 2
        name, begin = (m.group(group) or "").strip(" ."), m.start(group)
        words = [w for w in name.split() if not _NOT_COMPANY.match(w.strip(".,"))
                 and not _spelled_out(w.strip(".,()"), query)]
        if begin in starts and len(name.split()) == 1:
            continue
        if _generic(name.split()):
            continue
        if words and not all(re.fullmatch(r"[\d.,%$]+", w) for w in words):
            candidate = " ".join(words)
            if registry is None or not registry.knows(candidate):
                yield candidate


def query_summary(ctx: RecallContext, query: str) -> np.ndarray | None:
    """The query's 512-d summary, as the corpus's chunks got theirs (static word-piece vectors
    -> the corpus PCA -> the pooling MLP), or None when the corpus is not compressed yet."""
    if "_doc_index" not in ctx.cache:
        ctx.cache["_doc_index"] = _load_doc_index(ctx)
    loaded = ctx.cache["_doc_index"]
    if loaded is None:
        return None
    _, _, pca, pooler = loaded
    from h3.resources.models.embedder import get_embedder
    from h3.resources.semantic.pooling import summarise
    from h3.resources.semantic.tokens import static_tokens

    tokens = static_tokens(get_embedder(), [query])[0]  # (T, 384)
    if not len(tokens):
        return None
    return np.asarray(summarise(pooler, [pca.transform(tokens)])[0], np.float32)  # (512,)


def doc_index_scores(ctx: RecallContext, query: str) -> dict[str, float]:
    """Cosine of the query's 1024-d vector to each document's (the `doc_index` asset), or {}
    when the corpus has no index yet (compress_corpus not run)."""
    summary = query_summary(ctx, query)
    if summary is None:
        return {}
    from h3.resources.semantic.doc_index import query_vector

    index, doc_ids, _, _ = ctx.cache["_doc_index"]
    if index is None:
        return {}
    scores, rows = index.search(query_vector(summary).reshape(1, -1), len(doc_ids))
    return {doc_ids[r]: float(s) for s, r in zip(scores[0], rows[0], strict=True)
            if r >= 0 and doc_ids[r] in ctx.ok_doc_ids}


def _load_doc_index(ctx: RecallContext):
    try:
        from h3.resources.semantic.artifacts import index_path, load_pooler, pca_path, pooler_path
        from h3.resources.semantic.doc_index import load_index
        from h3.resources.semantic.pca import PcaModel

        if not (pca_path().exists() and pooler_path().exists()):
            return None
        # the summaries serve the rerank even when the index is missing (its build stops when
        # the pooler's topic-separation check fails)
        index, doc_ids = load_index(index_path()) if index_path().exists() else (None, [])
        return index, doc_ids, PcaModel.load(pca_path()), load_pooler()[0]
    except Exception as exc:  # noqa: BLE001 - a half-written or stale index: said, then skipped
        ctx.warn(f"document index lookup failed: the compressed layer (PCA, pooler, document "
                 f"index) could not be read: {type(exc).__name__}: {exc}; summary cosines and "
                 "document-index scores are left out")
        return None


def route(ctx: RecallContext, query: str) -> Routing:
    """Which documents the query is about (see Routing and the module docstring)."""
    cache_key = ("_route", query)
    if cache_key in ctx.cache:
        return ctx.cache[cache_key]
    profiles = document_profiles(ctx)
    registry = issuer_registry(ctx)
    matches = registry.match(query)
    years, quarters, forms = query_years(query), query_quarters(query), query_forms(query)
    if matches:
        top = matches[0].strength
        # the strongest-named companies (two when the query compares them)
        chosen = [m for m in matches if m.strength >= top - 0.05]
        scores = {}
        for m in chosen:
            for d in m.company.doc_ids:
                if d in ctx.ok_doc_ids:
                    scores[d] = document_prior(profiles[d], m.strength, years, quarters, forms)
        if not years and not quarters:  # no period named: the company's latest filing says
            _add_recency(scores, profiles)  # what holds now ("who is the CFO")
        by = "company+period" if (years or quarters) and any(
            period_match(profiles[d], years, quarters) > 0 for d in scores) else "company"
        forms_named = [m.form for m in matches]
        absent, mentioned = _unknown_names(ctx, query, registry, forms_named)
        result = Routing(_best_first(scores), scores, by,
                         named=sorted({m.form for m in chosen}),
                         note=_absent_beside(query, registry, forms_named, absent, mentioned),
                         absent=absent, mentioned=mentioned)
    else:
        scores = {d: PERIOD_ONLY_SHARE * document_prior(p, 0.0, years, quarters, forms)
                  for d, p in profiles.items() if d in ctx.ok_doc_ids}
        scores = {d: s for d, s in scores.items() if s > 0}
        from h3.resources.recall.mentions import is_organisation, mentioning_documents

        absent, mentioned = _unknown_names(ctx, query, registry, [])
        # a company the question is about ("Is Globex's business cyclical?") that only other
        # companies' filings mention: their words about it would answer another question
        # ("Globex Display is a major customer" for "Globex's customers")
        about = [n for n in mentioned if is_organisation(ctx, n)]
        mentioned = [n for n in mentioned if n not in about]
        note = None
        if absent:
            note = f"{ABSENT_COMPANY_NOTE} {absent[0]!r}: answered from all documents"
        elif about:
            where = ", ".join(Path(ctx.doc_sources.get(d, d)).name
                              for d in mentioning_documents(ctx, about[0])[:3])
            note = (f"{ABSENT_COMPANY_NOTE} {about[0]!r}: the corpus only mentions it (in "
                    f"{where}); name the company whose filings you mean, or ask with --doc")
        elif mentioned:
            note = _mentioned_note(mentioned[0], "all documents")
        result = Routing(_best_first(scores) or None, scores, "period" if scores else "all",
                         note, absent=absent, mentioned=mentioned, about=about)
    result.off_period = off_period_documents(ctx, query, sorted(ctx.ok_doc_ids))
    ctx.cache[cache_key] = result
    return result


def _unknown_names(ctx: RecallContext, query: str, registry: IssuerRegistry,
                   forms: list[str]) -> tuple[list[str], list[str]]:
    """The names the query uses that no stored document is from (unknown_companies), split
    into (absent: the corpus never mentions them, mentioned: a chunk does, mentions.py). A name
    the question gives as another name of a stored company it names (`forms`: "X (formerly
    known as Acme)") is neither: it is that company."""
    from h3.resources.recall.mentions import corpus_mentions

    absent, mentioned = [], []
    for name in unknown_companies(query, registry):
        if any(aliased(query, name, f) for f in forms):
            continue
        (mentioned if corpus_mentions(ctx, name) else absent).append(name)
    return absent, mentioned


def _mentioned_note(name: str, answered_from: str) -> str:
    # not ABSENT_COMPANY_NOTE's words: `h3 ask` refuses on those
    return (f"no stored document is from {name!r}, but the corpus mentions it: answered from "
            f"{answered_from}")


def _absent_beside(query: str, registry: IssuerRegistry, forms: list[str], absent: list[str],
                   mentioned: list[str]) -> str | None:
    """The note for a query that names a stored company (`forms`) and also another name: one
    the corpus lacks ("Tesla's margin compared to Acme's": the answer would be about the wrong
    company), one it only mentions (a segment, a counterparty), or one the question itself gives
    as the stored one's other name ("X (formerly known as Acme)"), which is no other company."""
    if absent:
        return f"{ABSENT_COMPANY_NOTE} {absent[0]!r}: the question also names {forms[0]!r}"
    if mentioned:
        return _mentioned_note(mentioned[0], f"the documents of {forms[0]!r} and the others")
    for name in unknown_companies(query, registry):
        alias_of = next((f for f in forms if aliased(query, name, f)), None)
        if alias_of is not None:
            return (f"answered from the documents of {alias_of!r}: the question gives it as the "
                    f"other name of {name!r}, and no document is from {name!r} by that name")
    return None


def document_prior(profile: DocumentProfile, company: float, years: set[int],
                   quarters: set[str], forms: set[str]) -> float:
    """What a document's chunks gain for the query: the company's match strength, the named
    period's and the named form's (module constants)."""
    return (COMPANY_PRIOR * company
            + PERIOD_PRIOR * period_match(profile, years, quarters)
            + FORM_PRIOR * (profile.form_type in forms))


def _add_recency(scores: dict[str, float], profiles: dict[str, DocumentProfile]) -> None:
    """Adds up to RECENCY_PRIOR to the preferred documents by how recent their period is (the
    latest gets all of it), in place."""
    def when(d: str) -> tuple:
        p = profiles[d]
        return (p.fiscal_year or 0, p.fiscal_period or "", p.dated or "")

    ordered = sorted(scores, key=when)
    for i, d in enumerate(ordered):
        scores[d] += RECENCY_PRIOR * (i / (len(ordered) - 1) if len(ordered) > 1 else 1.0)


def _best_first(scores: dict[str, float]) -> list[str]:
    return sorted(scores, key=lambda d: (-scores[d], d))


def within_named_documents(query: str, routing: Routing) -> str:
    """The query as it reads inside the documents of the company it names: the company's forms
    taken out. Every chunk there is about that company, so its name only adds a common word to
    the full-text query and the word overlap."""
    if routing.by not in ("company", "company+period") or not routing.named:
        return query
    out = query
    for form in sorted(routing.named, key=len, reverse=True):
        pattern = r"[\s\-]*".join(re.escape(ch) for ch in form.replace(" ", ""))
        flags = 0 if re.fullmatch(r"[A-Z0-9&.]{1,5}", form) else re.IGNORECASE
        out = re.sub(r"(?<![\w&])" + pattern + r"(?:'s|’s)?(?![\w&])", " ", out, flags=flags)
    out = re.sub(r"\(\s*(?:formerly|previously|also|now)?\s*(?:known\s+as|called)?\s*\)", " ",
                 out, flags=re.IGNORECASE)
    out = " ".join(out.split())
    return out if out.strip(" ?.!") else query
