"""Whether a name a question uses is mentioned by the corpus, though no document is from it.

A question's capitalised words are taken for a company when the issuer registry does not know
them (documents.unknown_companies), and a company the corpus lacks makes `h3 ask` refuse. Many
such words are no issuer but what a filing is about: a segment or product ("F-35", an acronym
of a business unit), a counterparty (a company acquired or supplied), a method a paper studies
("HPO"). A name the
stored text mentions is therefore not called absent; the answer must then rest on evidence that
mentions it (resources/answers/ask.py).
"""

from __future__ import annotations

import re

from h3.resources.recall.companies import fold
from h3.resources.recall.router import RecallContext
from h3.resources.text_lang import fts_query

# Full-text matches read to find one that holds the whole name: BM25 ranks a chunk holding
# every word of the name high, so the first few suffice; more only costs the read.
MENTION_SEARCHED = 20


def mentions(text: str, name: str) -> bool:
    """Whether `text` holds `name` as whole words: an all-capital name ("HPO", "F-35") in
    capitals as written (so "IT" is not "it"), any other after folding case, accents and
    apostrophes (companies.fold)."""
    if not name.strip():
        return False
    if not re.search(r"[a-z]", name):
        return bool(re.search(r"(?<![\w&])" + re.escape(name) + r"(?![\w&])", text))
    return f" {fold(name)} " in f" {fold(text)} "


def corpus_mentions(ctx: RecallContext, name: str) -> bool:
    """Whether a chunk of an ok document mentions `name` (`mentions`), by one full-text search
    of the store (remembered per context). False when the store has no full-text index: the
    name is then treated as before, as a company the corpus may lack."""
    return bool(mentioning_documents(ctx, name))


def mentioning_documents(ctx: RecallContext, name: str) -> list[str]:
    """The ok documents whose chunks (among the full-text search's first MENTION_SEARCHED)
    mention `name`, best-ranked first (remembered per context)."""
    key = ("_mentions", name)
    if key not in ctx.cache:
        query = fts_query(name)
        rows = ctx.store.text_search("chunks", query, MENTION_SEARCHED,
                                     columns=["doc_id", "text"]) if query else []
        ctx.cache[key] = list(dict.fromkeys(
            r["doc_id"] for r in rows
            if r.get("doc_id") in ctx.ok_doc_ids and mentions(r.get("text") or "", name)))
    return ctx.cache[key]


def is_organisation(ctx: RecallContext, name: str) -> bool:
    """Whether the knowledge graph holds `name`, or a name inside it ("Globex" in "Globex
    Electronics"), as an organisation (spaCy's ORG): a company the question is about, not a
    method, product or figure the corpus discusses ("HPO", "F-35")."""
    key = ("_organisation", name)
    if key not in ctx.cache:
        from h3.resources.recall.gazetteer import gazetteer
        from h3.resources.recall.intent import query_entities
        from h3.resources.store.base import sql_str

        ids = query_entities(name, gazetteer(ctx.store))
        listed = ", ".join(sql_str(i) for i in ids)
        ctx.cache[key] = bool(ids) and bool(ctx.store.rows(
            "entities", f"entity_id IN ({listed}) AND type = 'ORG'", ["entity_id"], limit=1))
    return ctx.cache[key]
