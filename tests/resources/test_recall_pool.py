"""Text recall's rerank pool bounded to the pages that can still be among the first k
(resources/recall/pool.py): the same hits, fewer chunks reranked."""

import json

import numpy as np

from h3.resources.nlp.issuer import DocumentProfile
from h3.resources.recall.pool import reachable
from h3.resources.recall.router import RecallContext
from h3.resources.store.lance import LanceDocumentStore


def test_a_page_whose_best_case_is_below_the_kth_worst_case_is_dropped():
    pages = [("d1", 1), ("d1", 1), ("d1", 2), ("d2", 1), ("d3", 1)]
    partial = np.array([0.9, 0.1, 0.8, 0.3, 0.95])
    kept = reachable(pages, partial, slack=0.25, support=0.3, prior={}, allowed={"d1", "d2"}, k=2)
    # lows: d1 p1 0.9 + 0.3 x 0.1 = 0.93, d1 p2 0.8, d2 p1 0.3; d2 p1's best case 0.55 < 0.8;
    # d3 is not a document a hit may come from
    assert kept.tolist() == [0, 1, 2]
    # a prior lifts a page back within reach; fewer allowed pages than k keep them all
    assert reachable(pages, partial, 0.25, 0.3, {"d2": 0.3}, {"d1", "d2"}, 2).tolist() == [0, 1, 2, 3]
    assert reachable(pages, partial, 0.25, 0.3, {}, {"d2"}, 2).tolist() == [3]


def test_the_true_first_k_pages_are_always_kept():
    """Against the final scores themselves (text.py: best chunk + support x second best, plus
    the document's prior), for random pools and word overlaps."""
    rng = np.random.default_rng(0)
    for _ in range(300):
        n, k = int(rng.integers(2, 60)), int(rng.integers(1, 6))
        pages = [(f"d{rng.integers(4)}", int(rng.integers(6))) for _ in range(n)]
        partial = rng.normal(0.4, 0.3, n)
        final = partial + 0.25 * rng.random(n)  # the word overlap in [0, 1], weighted
        prior = {f"d{i}": float(rng.random() * 0.3) for i in range(4)}
        allowed = {f"d{i}" for i in range(4) if rng.random() < 0.8}
        by_page: dict = {}
        for key, score in zip(pages, final, strict=True):
            by_page.setdefault(key, []).append(score)
        scored = {key: max(s) + prior[key[0]] + 0.3 * max(sorted(s)[-2] if len(s) > 1 else 0, 0)
                  for key, s in by_page.items() if key[0] in allowed}
        first = sorted(scored, key=lambda key: -scored[key])[:k]
        kept = {pages[i] for i in reachable(pages, partial, 0.25, 0.3, prior, allowed, k)}
        assert set(first) <= kept
        # scored exactly too: the first k pages and their ties, every chunk of each
        words = final - partial  # (n,) each chunk's weighted word overlap
        exact = reachable(pages, partial, 0.25, 0.3, prior, allowed, k,
                          overlap=lambda positions, words=words: words[positions])
        kth = scored[first[-1]] if first else 0.0
        assert {pages[i] for i in exact} == {p for p in scored if scored[p] >= kth - 1e-6}
        assert sorted(exact) == [i for i, p in enumerate(pages) if p in {pages[j] for j in exact}]


CASH_FLOWS = ("Consolidated Statements of Cash Flows | Net cash provided by operating activities "
              "| {a:,} | Depreciation and amortization | {b:,} | Purchases of property and "
              "equipment | ({c:,}) | Net cash used in investing activities | ({d:,}) | Net cash "
              "used in financing activities | ({e:,})")


def _filings(tmp_path, filings: int = 12) -> RecallContext:
    """One company's many filings (the same issuer, one a year), each with statement pages
    of several chunks and prose pages: the pool a company with many filings brings."""
    store = LanceDocumentStore(tmp_path / "db")
    rng = np.random.default_rng(1)
    rows, docs = [], {}
    for i in range(filings):
        doc = f"f{i}"
        docs[doc] = DocumentProfile("Northwind Trading Holdings, Inc.", ("Northwind Trading",),
                                    "NWTH", "10-K", 2010 + i, f"FY{2010 + i}")
        store.upsert_document({"doc_id": doc, "source": f"/x/{doc}.pdf", "status": "ok",
                               "pages": 40, "metadata_json": json.dumps(
                                   {"profile": docs[doc].to_json()})})
        for page in range(1, 9):
            for c in range(3):
                text = (CASH_FLOWS.format(a=1000 * page + c, b=40 + i, c=300 + c, d=500 + page,
                                          e=70 + i) if page <= 4 else
                        f"Capital expenditure plans for stores, note {page}.{c} of year {i}.")
                vector = rng.standard_normal(384).astype(np.float32)
                rows.append({"doc_id": doc, "chunk_id": f"{doc}:c{page * 10 + c}", "page": page,
                             "bbox": [0, 10 * c, 100, 10 * c + 9], "text": text, "section": "",
                             "kind": "table" if page <= 4 else "text", "token_count": 40,
                             "region_ids": [], "vector": (vector / np.linalg.norm(vector)).tolist()})
    store.add("chunks", rows)
    store.ensure_indexes("chunks")

    def embed(texts):
        out = np.random.default_rng(len(texts[0])).standard_normal((len(texts), 384))
        return (out / np.linalg.norm(out, axis=1, keepdims=True)).astype(np.float32)

    return RecallContext(store=store, ok_doc_ids=set(docs),
                         doc_sources={d: f"/x/{d}.pdf" for d in docs}, embed=embed,
                         pages_total=40 * filings)


def test_the_bounded_pool_gives_the_same_hits_for_fewer_reranked_chunks(tmp_path, monkeypatch):
    from h3.resources.recall import text

    ctx = _filings(tmp_path)
    reranked: list[int] = []
    rerank = text.rerank

    def counting(ctx, query, fused, *args, **kwargs):
        reranked.append(len(fused))
        return rerank(ctx, query, fused, *args, **kwargs)

    monkeypatch.setattr(text, "rerank", counting)
    queries = ["What was Northwind Trading's capital expenditure in FY2019?",
               "Northwind Trading free cash flow in FY2015",
               "What was the net cash used in investing activities in the cash flow statement?",
               "Northwind Trading capital expenditure plans for stores"]
    bounded = [text.text_recall(ctx, q, 3) for q in queries]
    n = len(queries)
    monkeypatch.setattr(text, "reachable", lambda pages, *a, **kw: np.arange(len(pages)))
    whole = [text.text_recall(ctx, q, 3) for q in queries]
    assert bounded == whole  # the same pages, scores, boxes and texts
    assert all(len(hits) == 3 for hits in bounded)
    # 12 filings x 4 statement pages x 3 chunks reach the pool; the rerank sees the chunks
    # of the first 3 pages only
    assert all(w >= 144 for w in reranked[n:]) and reranked[:n] == [9] * n


def test_the_rerank_reuses_the_word_coverage_the_bounded_pool_computed(tmp_path, monkeypatch):
    """Each chunk's word coverage is computed once a query: the bounded pool's, reused by the
    rerank (with the same scores as computing it again)."""
    from collections import Counter

    from h3.resources.recall import text

    ctx = _filings(tmp_path)
    query = "What was Northwind Trading's capital expenditure in FY2019?"
    before = text.text_recall(ctx, query, 3)
    calls: Counter = Counter()
    stems = text.chunk_stems

    def counting(ctx, row):
        calls[row["chunk_id"]] += 1
        return stems(ctx, row)

    monkeypatch.setattr(text, "chunk_stems", counting)
    assert text.text_recall(ctx, query, 3) == before
    assert calls and max(calls.values()) == 1
