"""Whether a name a question uses is mentioned by the corpus, though no document is from it.

A question's capitalised words are taken for a company when the issuer registry does not know
them (documents.unknown_companies), and a company the corpus lacks makes `h3 ask` refuse. Many
such words are no issuer but what a filing is about: a segment or product ("DCAI", "F-35"), a
counterparty ("Tower Semiconductor", "Afterpay"), a method a paper studies ("HPO"). A name the
stored text mentions is therefore not called absent; the answer must then rest on evidence that
mentions it (resources/answers/ask.py).
"""

from __future__ import annotations

import re

from h3.resources.recall.companies import fold
from h3.resources.recall.router import RecallContext
from h3.resources.text_lang import fts_form

# Full-text matches read to find one that holds the whole name: BM25 ranks a chunk holding
# every word of the name high, so the first few suffice; more only costs the read.
MENTION_SEARCHED = 20
_FTS_UNSAFE = re.compile(r"[^\w\s.]")  # what text recall strips from a full-text query too


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
    key = ("_mentions", name)
    if key not in ctx.cache:
        query = fts_form(" ".join(_FTS_UNSAFE.sub(" ", name).split()))
        rows = ctx.store.text_search("chunks", query, MENTION_SEARCHED,
                                     columns=["doc_id", "text"]) if query else []
        ctx.cache[key] = any(r.get("doc_id") in ctx.ok_doc_ids
                             and mentions(r.get("text") or "", name) for r in rows)
    return ctx.cache[key]
