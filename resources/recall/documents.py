"""Documents first: which documents a query is about, before any chunk is searched.

A query that names a company (its name, a short form, initials or ticker: the document profiles
of resources/nlp/issuer.py) is routed to that company's documents, those of the period it names
first ("FY2022", "fiscal 2022", "Q3 2024"). A query that names no company of the corpus is
answered from every document; when it seems to name one that is not in the corpus, the result
carries a note saying so. Without a company, the 1024-d document index (the `doc_index` asset:
FAISS over [mean; max] of the 512-d chunk summaries) ranks the documents for `h3 recall --mode
documents` (text recall then searches every document: see the filings bench for why).
"""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ontology.document import Hit
from resources.nlp.issuer import QUARTER_RE, QUARTER_WORDS, DocumentProfile, profile_pdf
from resources.recall.router import RecallContext, register_intent

# a data cache, not a client: the profile (issuer, period) of a document stored before profiles
# were kept in its metadata, read from its PDF once per process rather than once per query
_PROFILE_CACHE: dict[tuple[str, str], DocumentProfile] = {}
_LOCK = threading.Lock()
_YEAR = re.compile(r"\b(?:FY|fiscal(?:\s+year)?\s*|F)?'?((?:19|20)\d{2})\b", re.IGNORECASE)
# Words that look like names in a question but are not companies (finance acronyms, periods).
_NOT_COMPANY = re.compile(r"^(?:FY\d*|Q[1-4]|H[12]|USD|EUR|GBP|GAAP|EBITDA?|EPS|SEC|CEO|CFO|COO|"
                          r"CAPEX|COGS|DPO|DSO|PP&E|PPNE|ROA|ROE|ROIC|YoY|TTM|LTM|"
                          r"What|Who|How|Which|When|Where|Why|Is|Are|Does|Do|Did|Has|Have|Was|"
                          r"Were|Can|Please|Answer|Give|Using|Based|Assume|The|A|An|In|Of|For|"
                          r"If|We|Our|I)$")
_CANDIDATE_NAME = re.compile(
    r"(?:\b(?:for|of|at|by|from|about|does|did|is|has|was|were|are)\s+)"
    r"((?:[A-Z][\w&.-]*|\d+[A-Z][\w&]*)(?:\s+(?:[A-Z][\w&.-]*|&))*)"
    r"|((?:[A-Z][\w&.-]*|\d+[A-Z][\w&]*)(?:\s+[A-Z][\w&.-]*)*)(?:'s|’s)\b")


@dataclass
class Routing:
    """Where a query's chunks are searched: `doc_ids` (None = every document), why, and the
    document-level scores of every document (1.0 for a named one)."""

    doc_ids: list[str] | None
    scores: dict[str, float] = field(default_factory=dict)
    by: str = "all"  # company | company+period | doc_index | all
    note: str | None = None
    named: list[str] = field(default_factory=list)  # the company forms the query used


def _normalise(text: str) -> str:
    text = text.replace("’", "'")
    text = re.sub(r"'s\b", " ", text)
    return " " + re.sub(r"[^\w&.]+", " ", text.lower()).replace(". ", " ").strip(" .") + " "


def document_profiles(ctx: RecallContext) -> dict[str, DocumentProfile]:
    """doc_id -> profile for every ok document: stored at ingestion in the documents row's
    metadata (key `profile`); documents ingested before profiles existed are profiled from
    their file once per process."""
    cached = ctx.cache.get("_profiles")
    if cached is not None:
        return cached
    rows = ctx.store.rows("documents", "status = 'ok'", ["doc_id", "source", "metadata_json"])
    out: dict[str, DocumentProfile] = {}
    for row in rows:
        meta = json.loads(row.get("metadata_json") or "{}")
        if meta.get("profile"):
            out[row["doc_id"]] = DocumentProfile.from_json(meta["profile"])
            continue
        key = (row["doc_id"], row.get("source") or "")
        with _LOCK:
            profile = _PROFILE_CACHE.get(key)
        if profile is None:
            try:
                profile = profile_pdf(row["source"]) if Path(row["source"] or "").is_file() \
                    else DocumentProfile()
            except Exception:  # an unreadable old file only loses routing
                profile = DocumentProfile()
            with _LOCK:
                _PROFILE_CACHE[key] = profile
        out[row["doc_id"]] = profile
    ctx.cache["_profiles"] = out
    return out


def named_forms(query: str, profile: DocumentProfile) -> list[str]:
    """The issuer's forms that the query contains as whole words. Short all-capital forms
    (tickers, initials: "BA", "IBM") must match in capitals, so "ba" or "It" never route."""
    found = []
    norm = _normalise(query)
    for form in (profile.issuer, *profile.aliases):
        if not form:
            continue
        if re.fullmatch(r"[A-Z0-9&.]{1,5}", form) and not re.fullmatch(r"\d+[A-Z]+", form):
            if re.search(r"(?<![\w&])" + re.escape(form) + r"(?![\w&])", query):
                found.append(form)
        elif _normalise(form).strip() and f" {_normalise(form).strip()} " in norm:
            found.append(form)
    return found


def query_years(query: str) -> set[int]:
    return {int(m.group(1)) for m in _YEAR.finditer(query)}


def query_quarters(query: str) -> set[str]:
    """Quarter labels the query names, as profiles write them: "Q3 2024" for "third quarter
    of 2024", "Q3 FY24", "Q3 2024"."""
    out = set()
    for m in QUARTER_RE.finditer(query):
        if m.group(1) and m.group(2):
            out.add(f"Q{QUARTER_WORDS[m.group(1).lower()]} {m.group(2)}")
        elif m.group(3):
            year = m.group(4) if len(m.group(4)) == 4 else f"20{m.group(4)}"
            out.add(f"Q{m.group(3)} {year}")
    return out


def _in_period(profile: DocumentProfile, years: set[int], quarters: set[str]) -> bool:
    """A quarter named in the query must be the document's; otherwise its fiscal year."""
    if quarters:
        return profile.fiscal_period in quarters
    return profile.fiscal_year in years


def unknown_company(query: str) -> str | None:
    """A name the query seems to ask about ("... for Tesla", "Tesla's ..."), or None."""
    for m in _CANDIDATE_NAME.finditer(query):
        name = (m.group(1) or m.group(2) or "").strip(" .")
        words = [w for w in name.split() if not _NOT_COMPANY.match(w.strip(".,"))]
        if words and not all(re.fullmatch(r"[\d.,%$]+", w) for w in words):
            return " ".join(words)
    return None


def query_summary(ctx: RecallContext, query: str) -> np.ndarray | None:
    """The query's 512-d summary, as the corpus's chunks got theirs (static word-piece vectors
    -> the corpus PCA -> the pooling MLP), or None when the corpus is not compressed yet."""
    if "_doc_index" not in ctx.cache:
        ctx.cache["_doc_index"] = _load_doc_index()
    loaded = ctx.cache["_doc_index"]
    if loaded is None:
        return None
    _, _, pca, pooler = loaded
    from resources.models.embedder import get_embedder
    from resources.semantic.pooling import summarise
    from resources.semantic.tokens import static_tokens

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
    from resources.semantic.doc_index import query_vector

    index, doc_ids, _, _ = ctx.cache["_doc_index"]
    if index is None:
        return {}
    scores, rows = index.search(query_vector(summary).reshape(1, -1), len(doc_ids))
    return {doc_ids[r]: float(s) for s, r in zip(scores[0], rows[0], strict=True)
            if r >= 0 and doc_ids[r] in ctx.ok_doc_ids}


def _load_doc_index():
    try:
        from assets.doc_index import index_path
        from assets.pca import pca_path
        from assets.pooling import load_pooler, pooler_path
        from resources.semantic.doc_index import load_index
        from resources.semantic.pca import PcaModel

        if not (pca_path().exists() and pooler_path().exists()):
            return None
        # the summaries serve the rerank even when the index is missing (its build stops when
        # the pooler's topic-separation check fails)
        index, doc_ids = load_index(index_path()) if index_path().exists() else (None, [])
        return index, doc_ids, PcaModel.load(pca_path()), load_pooler()[0]
    except Exception:  # a half-written or stale index: route without it
        return None


def route(ctx: RecallContext, query: str) -> Routing:
    """Which documents the query's chunks come from (see the module docstring)."""
    cache_key = ("_route", query)
    if cache_key in ctx.cache:
        return ctx.cache[cache_key]
    profiles = document_profiles(ctx)
    named = {d: named_forms(query, p) for d, p in profiles.items() if d in ctx.ok_doc_ids}
    named = {d: f for d, f in named.items() if f}
    if named:
        # the longest form wins: "Activision Blizzard" over a ticker that also matched
        best = max(max(len(f) for f in forms) for forms in named.values())
        chosen = sorted(d for d, forms in named.items() if max(len(f) for f in forms) == best)
        years, quarters = query_years(query), query_quarters(query)
        in_period = [d for d in chosen if _in_period(profiles[d], years, quarters)]
        if quarters and not in_period:  # no filing of that quarter: the year's
            in_period = [d for d in chosen if _in_period(profiles[d], years, set())]
        by = "company"
        if in_period and len(in_period) < len(chosen):
            # the named period's filing first; the others stay (a later filing restates it)
            by = "company+period"
            chosen = in_period + [d for d in chosen if d not in in_period]
        scores = {d: (1.0 if d in in_period or by == "company" else 0.9) for d in chosen}
        result = Routing(chosen, scores, by,
                         named=sorted({f for fs in named.values() for f in fs}))
    else:
        note = None
        if (name := unknown_company(query)) is not None:
            note = (f"no document in the corpus is from {name!r}: answered from all "
                    "documents")
        result = Routing(None, {}, "all", note)
    ctx.cache[cache_key] = result
    return result


_ALSO_KNOWN = re.compile(r"\s*\((?:formerly|previously|also|now)\s+(?:known\s+as|called)\s+"
                         r"[^)]*\)", re.IGNORECASE)


def within_named_documents(query: str, routing: Routing) -> str:
    """The query as it reads inside the documents it is routed to by company: the company's
    forms (and "(formerly known as ...)") taken out. Every chunk there is about that company,
    so its name only adds a common word to the full-text query and the word overlap."""
    if routing.by not in ("company", "company+period") or not routing.named:
        return query
    out = _ALSO_KNOWN.sub("", query)
    for form in sorted(routing.named, key=len, reverse=True):
        flags = 0 if re.fullmatch(r"[A-Z0-9&.]{1,5}", form) else re.IGNORECASE
        out = re.sub(r"(?<![\w&])" + re.escape(form) + r"(?:'s|’s)?(?![\w&])", " ", out,
                     flags=flags)
    out = " ".join(out.split())
    return out if out.strip(" ?.!") else query


def documents_recall(ctx: RecallContext, query: str, k: int) -> list[Hit]:
    """`--mode documents`: the documents ranked for the query, one hit each (page 1, the cover),
    text = issuer, form and period."""
    profiles = document_profiles(ctx)
    routing = route(ctx, query)
    scores = dict(routing.scores)
    if routing.doc_ids is None:  # no company named: the document index ranks them
        scores = doc_index_scores(ctx, query) or {d: 0.0 for d in profiles}
    ranked = sorted(scores.items(), key=lambda kv: -kv[1])[:k]
    hits = []
    for doc_id, score in ranked:
        p = profiles.get(doc_id, DocumentProfile())
        label = " · ".join(x for x in (p.issuer, p.form_type, p.fiscal_period) if x)
        hits.append(Hit(doc_id=doc_id, source=ctx.doc_sources.get(doc_id, ""), page=1,
                        bbox=(0.0, 0.0, 0.0, 0.0), kind="document", score=score,
                        text=label or Path(ctx.doc_sources.get(doc_id, "")).name,
                        via="document"))
    return hits


register_intent("documents", documents_recall)
