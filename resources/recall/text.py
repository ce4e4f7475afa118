"""Text recall over chunks: dense (SBERT cosine), full-text (BM25), reciprocal-rank fusion, and a
feature rerank of the fused pool. Variants are selectable so the benchmark compares them."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from h3.ontology.document import Hit
from h3.resources.recall import multilingual
from h3.resources.recall.documents import (
    PREFERRED_SEARCHED,
    query_summary,
    route,
    within_named_documents,
)
from h3.resources.recall.fusion import rrf_scores
from h3.resources.recall.pool import reachable
from h3.resources.recall.router import RecallContext, merge_pages, register_intent
from h3.resources.store.base import sql_str
from h3.resources.text_lang import fts_query, han_bigrams, has_han

VARIANTS = ("dense", "fulltext", "hybrid", "hybrid+rerank", "hybrid+rerank+summary")
DEFAULT_VARIANT = "hybrid+rerank"
COLUMNS = ["doc_id", "chunk_id", "page", "bbox", "text", "kind", "section", "vector"]
STOPWORDS = frozenset(
    "a an and are as at be by does do for from how in is it its of on or says say show shows "
    "that the this to was were what when where which who why with me about there their".split())
_TOKEN = re.compile(r"[a-z0-9]+(?:[.,][0-9]+)?")


def terms(text: str) -> list[str]:
    """Lower-cased content words and numbers (stop words dropped)."""
    return [t for t in _TOKEN.findall(text.lower()) if t not in STOPWORDS and len(t) > 1]


def _stem(term: str) -> str:
    # Stays hand-written: BM25 already stems inside LanceDB's FTS (stem=True, English); this feeds the
    # in-memory coverage feature, where tantivy's Snowball stemmer lost recall@1 (docling queries 32 vs 33/38).
    return term if term[0].isdigit() else term[:5]  # crude, cheap, language-agnostic-ish


def coverage(query_terms: list[str], text: str, have: set[str] | None = None) -> float:
    """Share of the query's content terms (prefix-stemmed) that occur in the text (`have`: its
    stems, when already known)."""
    return coverage_of(query_terms)(text, have)


def coverage_of(query_terms: list[str]) -> Callable[[str, set[str] | None], float]:
    """`coverage` for one query over many texts: the query's terms are stemmed once, not once
    per text (a rerank over 1,800 candidates spent ~60 ms re-stemming them at 1M chunks)."""
    if not query_terms:
        return lambda text, have=None: 0.0
    # Han bigrams (from `query_terms_all`) have no stem: they are looked up in the text itself
    han = [t for t in query_terms if has_han(t)]
    # a stem the query repeats counts as often as it is repeated; the chunk's stems are met by
    # one set intersection (in C), not a Python loop over the query's ~25 stems per chunk
    repeats = Counter(_stem(t) for t in query_terms if not has_han(t))
    stemmed = set(repeats)
    n = len(query_terms)

    def score(text: str, have: set[str] | None = None) -> float:
        have = have if have is not None else stems(text)
        return (sum(repeats[s] for s in stemmed.intersection(have))
                + sum(t in text for t in han)) / n

    return score


def stems(text: str) -> set[str]:
    return {_stem(t) for t in terms(text)}


def word_stems(text: str) -> dict[str, set[str]]:
    """`stems`, each with the words of the text that have it."""
    out: dict[str, set[str]] = {}
    for t in terms(text):
        out.setdefault(_stem(t), set()).add(t)
    return out


def chunk_stems(ctx: RecallContext, row: dict) -> set[str]:
    """The stems of a chunk's text, computed once per context (the warm path's largest cost)."""
    cache = ctx.cache.setdefault("_chunk_stems", {})
    key = row["chunk_id"]
    if key not in cache:
        cache[key] = stems(row["text"] or "")
    return cache[key]


def query_terms_all(query: str) -> list[str]:
    """A query's content terms: words and numbers, plus Han bigrams for Chinese."""
    return terms(query) + (han_bigrams(query) if has_han(query) else [])


IN_MEMORY_DOCS = 4  # a query routed to this many documents or fewer: scored in memory


def document_chunks(ctx: RecallContext, doc_id: str) -> tuple[list[dict], np.ndarray]:
    """A document's chunk rows and their (N, 384) vectors, read once per context: a query
    routed to a few documents is scored against them in memory, exactly, without a store
    query (the warm path of `h3 recall`)."""
    key = ("_doc_chunks", doc_id)
    if key not in ctx.cache:
        rows = ctx.store.rows("chunks", f"doc_id = {sql_str(doc_id)}", COLUMNS)
        vectors = with_array_vectors(rows)  # (N, 384)
        # a document stored without text (0 chunks) has no vectors: an empty (0, 384)
        ctx.cache[key] = (rows, vectors if rows else np.zeros((0, 384), np.float32))
    return ctx.cache[key]


def with_array_vectors(rows: list[dict]) -> np.ndarray:
    """The rows' vectors as one (N, 384) float32 array, each row's `vector` made its row of it
    (in place): rows kept per context are stacked again by every query's rerank, which took
    ~11 ms a query from Python lists for the ~1,800 statement-page chunks at 1M chunks."""
    vectors = np.asarray([r["vector"] for r in rows], np.float32).reshape(len(rows), -1)
    for row, vector in zip(rows, vectors, strict=True):
        row["vector"] = vector  # (384,)
    return vectors


def _seen_before(ctx: RecallContext, doc_ids: list[str]) -> bool:
    """Whether every routed document was searched before in this context: a one-off query
    (`h3 recall` from the shell) is cheaper as one store search than as a document load."""
    touches = ctx.cache.setdefault("_doc_touches", {})
    seen = all(touches.get(d, 0) or ("_doc_chunks", d) in ctx.cache for d in doc_ids)
    for d in doc_ids:
        touches[d] = touches.get(d, 0) + 1
    return seen


def dense(ctx: RecallContext, query: str, n: int, where: str | None = None,
          doc_ids: list[str] | None = None) -> list[dict]:
    """The n chunks nearest the query by cosine (within `where`; `doc_ids`, when given, are
    the same documents, few enough to score in memory)."""
    if doc_ids is not None and len(doc_ids) <= IN_MEMORY_DOCS and _seen_before(ctx, doc_ids):
        parts = [document_chunks(ctx, d) for d in doc_ids]
        rows = [r for part, _ in parts for r in part]
        if not rows:
            return []
        cos = np.concatenate([v for part, v in parts if part]) @ ctx.query_vector(query)  # (N,)
        top = np.argsort(-cos, kind="stable")[:n]
        return [{**rows[i], "_distance": 1.0 - float(cos[i])} for i in top]
    return ctx.store.vector_search("chunks", ctx.query_vector(query), n, where=where,
                                   columns=COLUMNS)


def fulltext(ctx: RecallContext, query: str, n: int, where: str | None = None) -> list[dict]:
    cleaned = fts_query(query)
    return ctx.store.text_search("chunks", cleaned, n, where=where,
                                 columns=COLUMNS) if cleaned else []


# Two store searches at a time for one query (the dense lists beside the full-text ones): the
# wait is in LanceDB's native code, which releases the GIL.
_SEARCHES = ThreadPoolExecutor(max_workers=2, thread_name_prefix="h3-recall")


def preferred_documents(ctx: RecallContext, query: str) -> list[str]:
    """The documents the routing prior prefers most, searched on their own besides the whole
    store (documents.py: PREFERRED_SEARCHED), best first; [] when it prefers none."""
    return (route(ctx, query).doc_ids or [])[:PREFERRED_SEARCHED]


def doc_filter(doc_ids: list[str]) -> str | None:
    """The chunk filter of these documents (None: no filter)."""
    return f"doc_id IN ({', '.join(map(sql_str, doc_ids))})" if doc_ids else None


def _dense_lists(ctx: RecallContext, query: str, n: int, where: str | None = None,
                 doc_ids: list[str] | None = None) -> list[list[dict]]:
    """The dense ranked lists of a store with multilingual vectors: SBERT's (not for a Chinese
    query) and e5's (resources/recall/multilingual.py)."""
    lists = ([dense(ctx, query, n, where, doc_ids)] if multilingual.sbert_understands(query)
             else [])
    return lists + multilingual.dense(ctx, query, n, where)


def rrf(*ranked: list[dict]) -> list[tuple[dict, float]]:
    """Reciprocal-rank fusion of ranked lists of chunk rows (keyed by chunk_id), best first."""
    rows: dict[str, dict] = {}
    for lst in ranked:
        for row in lst:
            rows.setdefault(row["chunk_id"], row)
    score = rrf_scores([row["chunk_id"] for row in lst] for lst in ranked)
    return sorted(((rows[c], s) for c, s in score.items()), key=lambda rs: -rs[1])


SUMMARY_WEIGHT = 0.15  # "hybrid+rerank+summary": weight of the 512-d summary cosine


def summary_cosines(ctx: RecallContext, query: str, chunk_ids: list[str]) -> dict[str, float]:
    """Cosine of the query's 512-d summary to each chunk's (the `chunk_pooling` asset); {} when
    the corpus has none."""
    q = query_summary(ctx, query)
    if q is None or not chunk_ids:
        return {}
    rows = ctx.store.rows("chunk_summaries",
                          f"chunk_id IN ({', '.join(map(sql_str, chunk_ids))})",
                          ["chunk_id", "vector"])
    return {r["chunk_id"]: float(np.asarray(r["vector"], np.float32) @ q) for r in rows}


# the rerank's weights: cosine, word overlap, BM25 relative to the best
DENSE_WEIGHT, COVERAGE_WEIGHT, BM25_WEIGHT = 0.55, 0.25, 0.20


def dense_cosines(ctx: RecallContext, query: str, pool: list[tuple[dict, float]]) -> np.ndarray:
    """(P,) each pooled chunk's cosine to the query."""
    if multilingual.available(ctx):  # each chunk compared through the model that embedded it
        return multilingual.dense_scores(ctx, query, [row for row, _ in pool])  # (P,)
    q = ctx.query_vector(query)  # (384,)
    vecs = np.asarray([row["vector"] for row, _ in pool], dtype=np.float32)  # (P, 384)
    return vecs.reshape(len(pool), -1) @ q  # (P,)


def rerank(ctx: RecallContext, query: str, fused: list[tuple[dict, float]],
           bm25: dict[str, float], summary: dict[str, float] | None = None,
           words: str | None = None, cos: np.ndarray | None = None,
           coverage: dict[str, float] | None = None,
           ) -> tuple[list[tuple[dict, float]], dict[str, float]]:
    """Re-scores the fused pool from three signals the fusion only saw as ranks: the exact
    cosine to the query (`cos`, when already computed), the BM25 score relative to the best one,
    and how many of the query's content words (of `words`, default the query) the chunk
    contains (`coverage`: chunk_id -> that share, where `within_reach` computed it already).
    Also returns each chunk's dense score (chunk_id -> cosine), for the other-language slot
    placed after later re-sorts."""
    if not fused:
        return [], {}
    cos = dense_cosines(ctx, query, fused) if cos is None else cos  # (P,)
    top_bm25 = max(bm25.values(), default=0.0) or 1.0
    covered = coverage_of(query_terms_all(words or query))
    known = coverage or {}
    scored = []
    for (row, _), c in zip(fused, cos, strict=True):
        share = known.get(row["chunk_id"])
        if share is None:
            share = covered(row["text"], chunk_stems(ctx, row))
        s = (DENSE_WEIGHT * float(c) + COVERAGE_WEIGHT * share
             + BM25_WEIGHT * bm25.get(row["chunk_id"], 0.0) / top_bm25
             + SUMMARY_WEIGHT * (summary or {}).get(row["chunk_id"], 0.0))
        scored.append((row, s))
    scored.sort(key=lambda rs: -rs[1])
    return scored, {row["chunk_id"]: float(c) for (row, _), c in zip(fused, cos, strict=True)}


def statement_boosts(ctx: RecallContext, query: str) -> dict[tuple[str, int], float]:
    """(doc_id, page) -> boost of the financial-statement pages the query asks for, in the
    documents the routing prior prefers (every document when it prefers none;
    resources/recall/statements.py)."""
    from h3.resources.recall.statements import boosts

    if not ctx.statement_pages:
        return {}
    return boosts(ctx, query, route(ctx, query).doc_ids or sorted(ctx.ok_doc_ids))


def statement_rows(ctx: RecallContext, boost: dict[tuple[str, int], float],
                   have: set[str]) -> list[tuple[dict, float]]:
    """The chunks of the boosted pages that the searches did not bring, for the rerank."""
    by_doc: dict[str, set[int]] = {}
    for doc_id, page in boost:
        by_doc.setdefault(doc_id, set()).add(page)
    out = []
    for doc_id, pages in by_doc.items():
        out += [(r, 0.0) for r in statement_page_rows(ctx, doc_id)
                if int(r["page"]) in pages and r["chunk_id"] not in have]
    return out


def statement_page_rows(ctx: RecallContext, doc_id: str) -> list[dict]:
    """The chunk rows of a document's statement pages (any statement's), read once per context:
    only those pages, so a one-off query from the shell does not load whole documents (~0.2 s
    for five filings), and a long-lived process does not query them again."""
    from h3.resources.recall.statements import statement_pages

    key = ("_statement_rows", doc_id)
    if key not in ctx.cache:
        loaded = ctx.cache.get(("_doc_chunks", doc_id))
        pages = {p for found in statement_pages(ctx, doc_id).values() for p in found}
        if loaded is not None:
            ctx.cache[key] = [r for r in loaded[0] if int(r["page"]) in pages]
        elif pages:
            listed = ", ".join(str(p) for p in sorted(pages))
            ctx.cache[key] = ctx.store.rows(
                "chunks", f"doc_id = {sql_str(doc_id)} AND page IN ({listed})", COLUMNS)
            with_array_vectors(ctx.cache[key])
        else:
            ctx.cache[key] = []
    return ctx.cache[key]


PAGE_SUPPORT = 0.3


def page_support(ranked: list[tuple[dict, float]]) -> list[tuple[dict, float]]:
    """Adds to each chunk's score PAGE_SUPPORT x the score of the next-best chunk of its page:
    a page where two passages answer (a note's paragraphs, a statement's table rows) is
    a likelier answer page than one with a single passage of the same score."""
    by_page: dict[tuple[str, int], list[float]] = {}
    for row, score in ranked:
        by_page.setdefault((row["doc_id"], int(row["page"])), []).append(score)
    second = {key: sorted(scores, reverse=True)[1] if len(scores) > 1 else 0.0
              for key, scores in by_page.items()}
    return sorted(((row, score + PAGE_SUPPORT * max(second[(row["doc_id"], int(row["page"]))],
                                                   0.0)) for row, score in ranked),
                  key=lambda rs: -rs[1])


def within_reach(ctx: RecallContext, query: str, pool: list[tuple[dict, float]],
                 cos: np.ndarray, bm25: dict[str, float], summary: dict[str, float] | None,
                 boost: dict[tuple[str, int], float], prior: dict[str, float], words: str,
                 k: int) -> tuple[list[tuple[dict, float]], np.ndarray, dict[str, float]]:
    """The pool (and its cosines) with only the chunks of the first k pages (and pages tied
    with the k-th; pool.py): the same hits for a fraction of the rerank's work over a pool
    that a company with many filings fills with their statement pages. Also returns the word
    coverage it computed on the way (chunk_id -> share), which the rerank then reuses."""
    keys = [(row["doc_id"], int(row["page"])) for row, _ in pool]
    # (P,) each chunk's score but its word overlap (its terms added in another order)
    partial = DENSE_WEIGHT * cos.astype(np.float64)
    top_bm25 = max(bm25.values(), default=0.0) or 1.0
    for weight, score in ((BM25_WEIGHT / top_bm25, bm25), (SUMMARY_WEIGHT, summary or {})):
        if score:
            partial += weight * np.fromiter((score.get(row["chunk_id"], 0.0) for row, _ in pool),
                                            np.float64, len(pool))
    if boost:
        partial += np.fromiter((boost.get(key, 0.0) for key in keys), np.float64, len(pool))
    query_terms = query_terms_all(words or query)
    covered = coverage_of(query_terms)

    coverage: dict[str, float] = {}

    def share(row: dict) -> float:
        coverage[row["chunk_id"]] = covered(row["text"], chunk_stems(ctx, row))
        return coverage[row["chunk_id"]]

    def overlap(positions: np.ndarray) -> np.ndarray:  # (n,) as the rerank weighs it
        return np.fromiter((COVERAGE_WEIGHT * share(pool[i][0]) for i in positions),
                           np.float64, len(positions))

    keep = reachable(keys, partial, COVERAGE_WEIGHT if query_terms else 0.0, PAGE_SUPPORT,
                     prior, ctx.ok_doc_ids, k, overlap)
    return [pool[i] for i in keep], cos[keep], coverage


def text_recall(ctx: RecallContext, query: str, k: int,
                variant: str = DEFAULT_VARIANT) -> list[Hit]:
    """The top-k chunk hits of one query with the given variant (see VARIANTS)."""
    if variant not in VARIANTS:
        raise ValueError(f"unknown text recall variant {variant!r}; allowed: {VARIANTS}")
    # over-fetch: rows of documents not yet ok are dropped and hits of one page merge below
    pool = max(6 * k, 30)
    routing = route(ctx, query)
    preferred = preferred_documents(ctx, query)
    where = doc_filter(preferred)
    # words matched inside the named company's documents leave out its name (documents.py);
    # the dense search keeps the whole question (the name places it in the embedding space)
    words = within_named_documents(query, routing)
    ml = multilingual.available(ctx)

    def dense_lists(w: str | None = None, ids: list[str] | None = None) -> list[list[dict]]:
        """The nearest chunks in the whole store, or (`w`, `ids`) in the preferred documents."""
        return _dense_lists(ctx, query, pool, w, ids) if ml else [dense(ctx, query, pool, w, ids)]

    # the full-text searches: the whole store for the question, and the preferred documents
    # for its words without the named company
    searches = [(query, None)] + ([(words, where)] if where else [])

    ranked: list[tuple[dict, float]]
    if variant == "dense":
        ranked = rrf(*dense_lists(), *(dense_lists(where, preferred) if where else []))
    elif variant == "fulltext":
        ranked = rrf(*(fulltext(ctx, q, pool, w) for q, w in searches))
    else:
        # the store searches wait in LanceDB's native code: run side by side, not in turn. The
        # full-text ones start first, while the query is embedded (onnxruntime also releases
        # the GIL); the search within the preferred documents follows the shorter full-text one
        texts = [_SEARCHES.submit(fulltext, ctx, q, pool, w) for q, w in searches]
        ctx.query_vector(query)  # computed once here, not by two threads at once
        if ml:
            multilingual.query_vector(ctx, query)
        within = _SEARCHES.submit(dense_lists, where, preferred) if where else None
        d = dense_lists() + (within.result() if within else [])
        f = [t.result() for t in texts]
        ranked = rrf(*d, *f)
        if variant.startswith("hybrid+rerank"):
            boost = statement_boosts(ctx, query)
            ranked += statement_rows(ctx, boost, {r["chunk_id"] for r, _ in ranked})
            summary = (summary_cosines(ctx, query, [r["chunk_id"] for r, _ in ranked])
                       if variant.endswith("+summary") else None)
            bm25: dict[str, float] = {}
            for lst in f:  # one index, one scoring: the better of the two queries' scores
                for r in lst:
                    bm25[r["chunk_id"]] = max(bm25.get(r["chunk_id"], 0.0), float(r["_score"]))
            cos = dense_cosines(ctx, query, ranked) if ranked else None  # (P,)
            coverage: dict[str, float] | None = None  # (word coverage within_reach computed)
            if ranked and not ml and ctx.pages_total >= k:  # (the other-language slot
                # looks past the first k pages, and without page merging rows are the hits)
                ranked, cos, coverage = within_reach(ctx, query, ranked, cos, bm25, summary,
                                                     boost, routing.scores, words, k)
            ranked, dense_scores = rerank(ctx, query, ranked, bm25, summary, words=words,
                                          cos=cos, coverage=coverage)
            if boost:
                ranked = sorted(((r, s + boost.get((r["doc_id"], int(r["page"])), 0.0))
                                 for r, s in ranked), key=lambda rs: -rs[1])
            if ctx.pages_total >= k:
                ranked = page_support(ranked)
            if routing.scores:  # the routing prior: the named company's, period's, form's
                ranked = sorted(((r, s + routing.scores.get(r["doc_id"], 0.0))
                                 for r, s in ranked), key=lambda rs: -rs[1])
            if ml:  # a slot for the other language (multilingual.py), placed after every
                # re-sort by score: boosts and page support would push it back out
                ranked = multilingual.keep_other_language(ctx, query, ranked, dense_scores, k)
    ranked = [(row, score) for row, score in ranked if row["doc_id"] in ctx.ok_doc_ids]
    merge = ctx.pages_total >= k
    # only what the k hits are made of becomes a Hit (the pool holds ~1,800 rows at 1M chunks):
    # merged, the rows of the first k pages (merge_pages keeps those, with all their boxes)
    if merge:
        first_pages = set(list(dict.fromkeys((r["doc_id"], int(r["page"])) for r, _ in ranked))[:k])
        ranked = [(r, s) for r, s in ranked if (r["doc_id"], int(r["page"])) in first_pages]
    hits = [Hit(doc_id=row["doc_id"], source=ctx.doc_sources.get(row["doc_id"], ""),
                page=int(row["page"]), bbox=tuple(float(v) for v in row["bbox"]),
                kind=row["kind"], text=row["text"], score=score, via="text")
            for row, score in (ranked if merge else ranked[:k])]
    return (merge_pages(hits) if merge else hits)[:k]


register_intent("text", text_recall, detect=lambda q: True, always_in_auto=True)
