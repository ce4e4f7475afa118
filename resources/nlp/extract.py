"""Text in -> entity mentions + relation edges, each with its provenance (doc, page, bbox,
sentence). Works on `TextUnit`s (one layout region's text: it lies on one page inside one box),
so every mention and edge points at the box where a reader finds it.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable

from h3.ontology.entities import NAME_TYPES, entity_id, type_for_spacy_label
from h3.ontology.relations import Edge
from h3.resources.nlp import zh
from h3.resources.nlp.aliases import resolve_aliases
from h3.resources.nlp.pipeline import english, is_chinese
from h3.resources.nlp.relations import find_relations, mask
from h3.resources.nlp.types import Extraction, Mention, TextUnit

__all__ = ["Extraction", "Mention", "TextUnit", "extract"]

# "the company", "the bank's": refers to the organisation named last before it in the region.
_ORG_ANAPHOR = re.compile(
    r"\b(?:the|The|its|Its)\s+(?:company|firm|group|bank|carrier|maker|operator|lender|insurer|"
    r"airline|studio|retailer|startup|start-up|manufacturer|automaker|carmaker|chipmaker|"
    r"supplier|brewer|publisher|developer|conglomerate|business)"
    r"(?=\b)(?:'s|’s)?"
)
# Words a ruler pattern of capitalised tokens swallows at a sentence start ("Yesterday Acme
# Ltd"): function words come from spaCy's stop list; these sentence adverbs are not on it.
_LEADING_ADVERBS = {"yesterday", "today", "tomorrow", "separately", "earlier", "later",
                    "recently", "previously", "currently", "finally", "additionally",
                    "subsequently", "accordingly", "consequently", "initially", "notably",
                    "similarly", "specifically", "overall", "still", "now"}


def extract(units: Iterable[TextUnit], batch_size: int = 64) -> Extraction:
    """Entities and relations of one document's text units (all units share a doc_id), in
    reading order.

    Guarantees: every edge has doc, page, bbox and its sentence; every mention's entity_id is
    `ontology.entities.entity_id` of its (alias-resolved) name, so the same entity in another
    document gets the same id. A name recognised once is recognised everywhere in the document
    (the small NER model misses names at sentence starts). English and Chinese units are routed
    to their own rules.
    """
    units = [dataclasses.replace(u, text=_one_line(u.text)) for u in units
             if u.text and u.text.strip()]
    out = Extraction()
    english_units = [u for u in units if not is_chinese(u.text)]
    if english_units:
        sentences = []  # (unit, sentence text, [(start, end, text, type)])
        docs = english().pipe([u.text for u in english_units], batch_size=batch_size)
        for unit, doc in zip(english_units, docs, strict=True):
            sentences.extend((unit, text, spans) for text, spans in _sentence_spans(doc))
        gazetteer = _names(sentences)
        names_by_word = _name_index(gazetteer)
        last_org: tuple[str, str] | None = None  # carried across units, in reading order
        for unit, sentence, spans in sentences:
            spans = _add_known_names(sentence, spans, gazetteer, names_by_word)
            last_org = _relate(unit, sentence, spans, out, last_org)
    chinese_units = [u for u in units if is_chinese(u.text)]
    if chinese_units:  # segmenter-based rules with a per-document gazetteer (resources/nlp/zh.py)
        mentions, edges = zh.extract_units(chinese_units)
        out.mentions.extend(mentions)
        out.edges.extend(edges)
    return resolve_aliases(out)


def _one_line(text: str) -> str:
    """PDF text breaks lines mid-sentence: join them (CJK lines without a space)."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    out = ""
    for ln in lines:
        joiner = "" if (out and is_chinese(out[-1]) and is_chinese(ln[0])) else " "
        out = f"{out}{joiner}{ln}" if out else ln
    return re.sub(r"[ \t]+", " ", out)


def _sentence_spans(doc):
    """(sentence, [(start, end, text, type)]) per sentence, offsets relative to the sentence."""
    for sent in doc.sents:
        sentence = sent.text.strip()
        if not sentence:
            continue
        offset = sent.start_char + (len(sent.text) - len(sent.text.lstrip()))
        spans = []
        for ent in sent.ents:
            type_name = type_for_spacy_label(ent.label_)
            ent = _trim(ent) if type_name else None
            if ent is not None:
                spans.append((ent.start_char - offset, ent.end_char - offset, ent.text, type_name))
        yield sentence, spans


def _names(sentences) -> dict[str, str]:
    """Names (of name types, two words or more, or one capitalised word of 4+ letters) found
    anywhere in the document -> their type."""
    names: dict[str, str] = {}
    for _, _, spans in sentences:
        for _, _, text, type_name in spans:
            if type_name in NAME_TYPES and (" " in text or (len(text) >= 4 and text[0].isupper())):
                names.setdefault(text, type_name)
    return names


def _name_index(gazetteer: dict[str, str]) -> dict[str, list[str]]:
    """The document's known names by their first word, longest first. A long document knows
    thousands of names: searching each in every sentence grew with their product (minutes on a
    300-page report); a sentence now searches only names whose first word it contains."""
    index: dict[str, list[str]] = {}
    for name in sorted(gazetteer, key=len, reverse=True):
        first = re.search(r"\w+", name)
        if first:
            index.setdefault(first.group(0), []).append(name)
    return index


def _add_known_names(sentence: str, spans, gazetteer: dict[str, str],
                     index: dict[str, list[str]]):
    """Adds occurrences of the document's known names that the NER missed in this sentence
    (`index`: `_name_index(gazetteer)`)."""
    spans = list(spans)
    words = set(re.findall(r"\w+", sentence))
    for name in sorted((n for w in words & index.keys() for n in index[w]), key=len,
                       reverse=True):
        for m in re.finditer(r"(?<![\w])" + re.escape(name) + r"(?![\w])", sentence):
            if not any(s < m.end() and m.start() < e for s, e, *_ in spans):
                spans.append((m.start(), m.end(), name, gazetteer[name]))
    return sorted(spans)


def _relate(unit: TextUnit, sentence: str, spans, out: Extraction,
            last_org: tuple[str, str] | None) -> tuple[str, str] | None:
    """Appends one sentence's mentions and edges to `out`; returns the last organisation named
    (text, type), the antecedent of a later "the company"."""
    anaphors = _anaphors(sentence, spans, last_org)
    mentions = []
    for start, end, text, type_name in sorted(spans + anaphors):
        is_anaphor = (start, end, text, type_name) in anaphors
        name = last_org[0] if is_anaphor and last_org else text
        mentions.append(Mention(entity_id(type_name, name), name, type_name, unit.doc_id,
                                unit.page, unit.bbox, sentence, start, end, is_anaphor))
        # the NER often labels a company PERSON-like types; people and places never antecede
        if type_name in NAME_TYPES and type_name not in ("PERSON", "GPE") and not is_anaphor:
            last_org = (text, type_name)
    out.mentions.extend(m for m in mentions if not m.anaphor)
    masked = mask(sentence, [(m.start, m.end) for m in mentions])
    for match in find_relations(masked, [m.type for m in mentions]):
        head, tail = mentions[match.head], mentions[match.tail]
        if head.entity_id != tail.entity_id:
            out.edges.append(Edge(head.entity_id, tail.entity_id, match.relation, head.text,
                                  tail.text, unit.doc_id, unit.page, unit.bbox, sentence,
                                  rule=match.rule))
    return last_org


def _leading_noise(token) -> bool:
    """Punctuation, a function word or a sentence adverb, but not a number word ("One Medical"):
    judged from the word itself, as the pipeline runs no part-of-speech tagger."""
    return token.is_punct or (not token.like_num and (
        token.is_stop or token.lower_ in _LEADING_ADVERBS))


def _trim(ent):
    """Drops a leading adverb/determiner the ruler swallowed ("Yesterday Acme Ltd") and a
    trailing possessive ("Acme's"); None if nothing is left."""
    start, end = ent.start, ent.end
    while start < end - 1 and _leading_noise(ent.doc[start]):
        start += 1
    if ent.doc[end - 1].text in ("'s", "’s", "'") and end - start > 1:
        end -= 1
    span = ent.doc[start:end]
    text = span.text.strip()
    if not text or not any(c.isalnum() for c in text):
        return None
    return span


def _anaphors(sentence: str, spans, last_org) -> list[tuple[int, int, str, str]]:
    """'the company' mentions that stand for the last organisation named in this region."""
    if last_org is None and not any(t == "ORG" for *_, t in spans):
        return []
    taken = [(s, e) for s, e, *_ in spans]
    out = []
    for m in _ORG_ANAPHOR.finditer(sentence):
        if any(s < m.end() and m.start() < e for s, e in taken):
            continue
        # only an organisation named *before* this point can be its antecedent
        before = [sp for sp in spans if sp[1] <= m.start() and sp[3] == "ORG"]
        if before or last_org is not None:
            out.append((m.start(), m.end(), m.group(0), "ORG"))
    return out
