"""`--mode documents`: whole documents ranked by their own pages' evidence (the best few page
scores of text recall), not by one summary vector each: ten annual reports of one industry are
too alike as wholes (the `doc_index` asset ranked the right 10-K first 0.095 of the time).

Its own module because it reads text recall, which reads the routing prior
(resources/recall/documents.py): the prior then imports neither.
"""

from __future__ import annotations

from pathlib import Path

from h3.ontology.document import Hit
from h3.resources.nlp.issuer import DocumentProfile
from h3.resources.recall.documents import document_profiles, route
from h3.resources.recall.router import RecallContext, register_intent
from h3.resources.recall.text import text_recall

EVIDENCE_POOL = 60  # page hits of text recall that vote for their documents
EVIDENCE_WEIGHTS = (1.0, 0.5, 0.25)  # a document's best, second and third page


def evidence_scores(ctx: RecallContext, query: str) -> dict[str, float]:
    """doc_id -> how well the document's own pages answer the query: its best pages' text
    recall scores (priors included), weighted EVIDENCE_WEIGHTS. Unlike one summary vector per
    document, this tells apart filings that are alike as a whole (ten annual reports of one
    industry) by the passages that answer."""
    by_doc: dict[str, list[float]] = {}
    for hit in text_recall(ctx, query, EVIDENCE_POOL):
        by_doc.setdefault(hit.doc_id, []).append(hit.score)
    return {d: sum(w * s for w, s in zip(EVIDENCE_WEIGHTS, sorted(scores, reverse=True),
                                         strict=False))
            for d, scores in by_doc.items()}


def documents_recall(ctx: RecallContext, query: str, k: int) -> list[Hit]:
    """`--mode documents`: the documents ranked for the query by their pages' evidence (the
    routing prior included), one hit each (page 1, the cover), text = issuer, form and
    period."""
    profiles = document_profiles(ctx)
    scores = evidence_scores(ctx, query)
    for doc_id, prior in route(ctx, query).scores.items():
        scores.setdefault(doc_id, prior)  # a preferred document with no page in the pool
    ranked = sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))[:k]
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
