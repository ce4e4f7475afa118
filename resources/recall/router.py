"""The recall router: `recall(store, queries, k, mode)` runs the intents a query calls for and
merges their hits.

An intent is a handler `(ctx, query, k) -> list[Hit] | Ranked` plus a detector `(query) -> bool`
used by mode "auto". "text" always fires in auto mode; other areas register "structure" and
"relation":

    from h3.resources.recall import register_intent
    register_intent("structure", my_handler, detect=lambda q: "table" in q.lower())

Each intent ranks its own hits by its own score; scores of different intents are not compared.
The lists are merged by reciprocal rank fusion (RRF, as text recall fuses its dense and BM25
lists): a page found by two intents rises, and at equal fused rank the intent the query asked
for (a detected one) comes before the always-on text recall. Hits an intent marks as context
(`Ranked.context`: related to what the query names, not what it asks) come after every
intent's answers.
"""

from __future__ import annotations

import dataclasses
import importlib
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from h3.ontology.document import Hit
from h3.resources.recall.fusion import rrf_scores
from h3.resources.store.base import DocumentStore

log = logging.getLogger(__name__)
MODES = ("auto", "text", "structure", "relation", "documents")
# Modules that register intents when imported; one that cannot be imported is an error (a
# renamed module must not silently take its intent out of recall).
INTENT_MODULES = ("h3.resources.recall.text", "h3.resources.recall.structure",
                  "h3.resources.recall.relation", "h3.resources.recall.document_ranking")


@dataclass
class RecallContext:
    """What a handler may use. `ok_doc_ids`: the only documents it may return."""

    store: DocumentStore
    ok_doc_ids: set[str]
    doc_sources: dict[str, str]
    embed: Callable[[Sequence[str]], np.ndarray]  # texts -> (N, 384) unit vectors
    cache: dict = field(default_factory=dict)  # per-query scratch (e.g. the query vector)
    pages_total: int = 0  # pages of the ok documents: below k, a page may fill several slots
    # Financial-statement pages ranked up for questions that ask for a statement or one of its
    # metrics (resources/recall/statements.py); off: text recall as before issue 11 (the
    # filings bench's baseline row)
    statement_pages: bool = True
    # What recall worked around for every query of this context (a part of the store it could
    # not read): said in each result's `notes` from then on (`warn`)
    notes: list[str] = field(default_factory=list)

    def warn(self, message: str, query: str | None = None) -> None:
        """A failure recall works around instead of failing: logged as a warning and said in
        the notes of `query`'s result (of every result from now on when `query` is None)."""
        log.warning(message)
        notes = self.notes if query is None else self.cache.setdefault(("_notes", query), [])
        if message not in notes:
            notes.append(message)

    def notes_for(self, query: str) -> list[str]:
        return list(dict.fromkeys(self.notes + self.cache.get(("_notes", query), [])))

    def query_vector(self, query: str) -> np.ndarray:
        if query not in self.cache:
            self.cache[query] = self.embed([query])[0]  # (384,)
        return self.cache[query]


@dataclass(frozen=True)
class Ranked:
    """What a handler may return instead of a plain list: its answers, and context hits (e.g.
    other edges of an entity the query names) that rank after every intent's answers."""

    hits: list[Hit]
    context: list[Hit] = field(default_factory=list)


@dataclass(frozen=True)
class Intent:
    name: str
    handler: Callable[[RecallContext, str, int], list[Hit]]
    detect: Callable[[str], bool]
    always_in_auto: bool = False


INTENTS: dict[str, Intent] = {}


def register_intent(name: str, handler: Callable[[RecallContext, str, int], list[Hit] | Ranked],
                    detect: Callable[[str], bool] | None = None,
                    always_in_auto: bool = False) -> None:
    """Adds or replaces an intent. `detect` decides whether it fires in mode "auto"."""
    INTENTS[name] = Intent(name, handler, detect or (lambda q: False), always_in_auto)


def _load_intents() -> None:
    for module in INTENT_MODULES:
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name != module:
                raise
            raise ImportError(f"recall intent module {module} is missing (renamed or removed? "
                              "update router.INTENT_MODULES)", name=module) from exc


def _fires(intent: Intent, ctx: RecallContext, query: str) -> bool:
    """Whether `intent`'s detector fires for `query`; a detector that fails does not fire, and
    the result says so ("relation lookup failed: ...") rather than losing the intent quietly."""
    try:
        return bool(intent.detect(query))
    except Exception as exc:  # noqa: BLE001 - logged and noted: the other intents still answer
        ctx.warn(f"{intent.name} lookup failed: {type(exc).__name__}: {exc}", query)
        return False


def make_context(store: DocumentStore, embed: Callable | None = None) -> RecallContext:
    from h3.resources.models.embedder import get_embedder

    docs = store.rows("documents", "status = 'ok'", ["doc_id", "source", "pages"])
    return RecallContext(store=store, ok_doc_ids={d["doc_id"] for d in docs},
                         doc_sources={d["doc_id"]: d["source"] for d in docs},
                         embed=embed or get_embedder().encode,
                         pages_total=sum(int(d.get("pages") or 0) for d in docs))


def recall(store: DocumentStore, queries: Sequence[str], k: int = 5, mode: str = "auto",
           ctx: RecallContext | None = None) -> list[dict]:
    """One result per query, in order: {"query", "intent", "latency_ms", "hits": [...]}.

    Never returns rows of documents whose ingestion has not completed (status != ok). Raises
    ValueError for an unknown mode or k < 1."""
    if mode not in MODES:
        raise ValueError(f"unknown recall mode {mode!r}; allowed: {', '.join(MODES)}")
    if k < 1:  # (the CLI says so first; the Python API reached an IndexError)
        raise ValueError(f"k must be >= 1, got {k}")
    _load_intents()
    if mode != "auto" and mode not in INTENTS:
        raise ValueError(f"recall mode {mode!r} is not available (no handler registered); "
                         f"available: {', '.join(sorted(INTENTS))}")
    ctx = ctx or make_context(store)
    results = []
    for query in queries:
        t0 = time.perf_counter()
        if not query.strip():  # nothing to look for: no hits, rather than arbitrary ones
            results.append({"query": query, "intent": [], "latency_ms": 0.0, "hits": [],
                            "note": "empty query"})
            continue
        fired = ([i for i in INTENTS.values() if i.always_in_auto or _fires(i, ctx, query)]
                 if mode == "auto" else [INTENTS[mode]])
        answers: list[list[Hit]] = []
        context: list[list[Hit]] = []
        # the intents the query asked for first: they win ties of the fusion
        for intent in sorted(fired, key=lambda i: i.always_in_auto):
            found = intent.handler(ctx, query, k)
            found = found if isinstance(found, Ranked) else Ranked(found)
            answers.append(found.hits)
            context.append(found.context)
        hits = [h for h in fuse(answers) + fuse(context) if h.doc_id in ctx.ok_doc_ids]
        hits = (merge_pages(hits) if ctx.pages_total >= k else _dedupe(hits))[:k]
        result = {"query": query, "intent": [i.name for i in fired],
                  "latency_ms": round((time.perf_counter() - t0) * 1000, 2),
                  "hits": [h.to_json() for h in hits]}
        routing = ctx.cache.get(("_route", query))  # set by text/documents recall, if they ran
        if routing is not None:
            result["routing"] = {"by": routing.by, "named": routing.named,
                                 "documents": [ctx.doc_sources.get(d, d)
                                               for d in (routing.doc_ids or [])]}
            for names in ("absent", "mentioned", "about"):  # what `h3 ask` checks against
                if getattr(routing, names):
                    result["routing"][names] = list(getattr(routing, names))
            # the hits' filings that cannot report the year asked about (`h3 ask` quotes them last)
            shown = {h.doc_id for h in hits}
            if off := [d for d in routing.off_period if d in shown]:
                result["routing"]["off_period"] = off
            if routing.note:
                result["note"] = routing.note
        if notes := ctx.notes_for(query):  # what recall could not read, and worked around
            result["notes"] = notes
        results.append(result)
    return results


def _page_key(h: Hit) -> tuple:
    """What one answer is: a page of a document; a structural hit is an answer of its own."""
    return (h.doc_id, h.page) + ((tuple(round(v) for v in h.bbox),)
                                 if h.via == "structure" else ())


def fuse(lists: list[list[Hit]]) -> list[Hit]:
    """Every hit of `lists` (each ranked by its intent's own score), interleaved by reciprocal
    rank fusion of their pages (fusion.rrf_scores): a page's score is the sum over lists of
    1 / (RRF_K + its best rank there). Each list keeps its own order (an intent's ranking is its own evidence: a
    relation from an executive table stays before the same relation seen in a bio that text
    recall also found); fusion decides which list's next hit comes first. Ties: the earlier
    list first. A page's other hits follow its best one, for `merge_pages`."""
    ordered = [sorted(hits, key=lambda h: -h.score) for hits in lists]  # stable
    fused = rrf_scores([_page_key(h) for h in hits] for hits in ordered)  # a page once per list
    # Order-keeping merge, not a sort by fused score: an intent's own order is evidence to keep.
    heads = [0] * len(ordered)
    out: list[Hit] = []
    while True:
        waiting = [(-fused[_page_key(hits[heads[li]])], li) for li, hits in enumerate(ordered)
                   if heads[li] < len(hits)]
        if not waiting:
            return out
        li = min(waiting)[1]
        out.append(ordered[li][heads[li]])
        heads[li] += 1


def merge_pages(hits: list[Hit]) -> list[Hit]:
    """One hit per (document, page), in the order of `hits` (best first): the best hit's fields
    and score, with the boxes of every hit of that page after its own (issue 11: a page
    filling two of five slots hides another answer) and the other hits' texts as its
    `passages` (an answer on the page's second table stays quotable). A structural hit (a
    table or figure the query asked for) is an answer of its own: two figures of one page
    stay two hits."""
    merged: dict[tuple, Hit] = {}
    boxes: dict[tuple, list] = {}
    passages: dict[tuple, list] = {}
    for h in hits:
        key = _page_key(h)
        if key not in merged:
            merged[key] = h
            boxes[key] = list(h.boxes or (h.bbox,))
            passages[key] = list(h.passages)
            continue
        for b in h.boxes or (h.bbox,):
            if all(_rounded(b) != _rounded(o) for o in boxes[key]):
                boxes[key].append(b)
        texts = {merged[key].text} | {t for _, t in passages[key]}
        passages[key].extend((_floats(b), t) for b, t in ((h.bbox, h.text), *h.passages)
                             if t and t not in texts)
    return [dataclasses.replace(h, boxes=tuple(_floats(b) for b in boxes[key]),
                                passages=tuple(passages[key]))
            for key, h in merged.items()]


def _rounded(box) -> tuple:
    return tuple(round(v) for v in box)


def _floats(box) -> tuple:
    return tuple(float(v) for v in box)


def _dedupe(hits: list[Hit]) -> list[Hit]:
    """Drops a hit that repeats an earlier one (same doc, page, box) from another intent."""
    seen: set[tuple] = set()
    kept = []
    for h in hits:
        key = (h.doc_id, h.page, _rounded(h.bbox))
        if key not in seen:
            seen.add(key)
            kept.append(h)
    return kept
