"""Extraction -> edge rows, and edge rows -> entity nodes (one per entity across documents).

A node's type is a vote: each mention votes for the type the NER gave it, and each relation
votes (twice) for the type its role requires (the head of `ceo_of` is a PERSON, the tail of
`headquartered_in` a GPE), which corrects the small model's frequent ORG/PERSON mix-ups.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter, defaultdict
from collections.abc import Iterable

from h3.ontology.relations import RELATIONS_BY_NAME
from h3.resources.nlp.extract import Extraction

MENTIONS = "mentions"


def edge_rows(extraction: Extraction, doc_id: str) -> list[dict]:
    """Edge rows for the store: every relation edge, plus one `mentions` edge per (entity, page)
    holding its first sentence there (the page's surface forms and count in extra_json)."""
    types = {m.entity_id: m.type for m in extraction.mentions}
    rows = []
    for e in extraction.edges:
        rows.append(_row(doc_id, e.relation, e.head_id, e.tail_id, e.head_text, e.tail_text,
                         types.get(e.head_id, ""), types.get(e.tail_id, ""), e.page, e.bbox,
                         e.sentence, e.rule, dict(e.extra)))
    by_page: dict[tuple[str, int], list] = defaultdict(list)
    for m in extraction.mentions:
        by_page[(m.entity_id, m.page)].append(m)
    for (eid, page), ms in by_page.items():
        first = ms[0]
        surfaces = Counter(m.text for m in ms)
        type_votes = Counter(m.type for m in ms)
        rows.append(_row(doc_id, MENTIONS, f"doc:{doc_id}", eid, doc_id,
                         surfaces.most_common(1)[0][0], "DOCUMENT",
                         type_votes.most_common(1)[0][0], page, first.bbox, first.sentence,
                         "ner", {"count": len(ms), "surfaces": dict(surfaces),
                                 "types": dict(type_votes)}))
    return rows


def _row(doc_id, relation, head_id, tail_id, head_text, tail_text, head_type, tail_type, page,
         bbox, sentence, rule, extra) -> dict:
    key = f"{doc_id}|{page}|{relation}|{head_id}|{tail_id}|{sentence}"
    return {
        "edge_id": hashlib.sha1(key.encode("utf-8")).hexdigest()[:16], "doc_id": doc_id,
        "relation": relation, "head_id": head_id, "tail_id": tail_id, "head_text": head_text,
        "tail_text": tail_text, "head_type": head_type, "tail_type": tail_type, "page": int(page),
        "bbox": [float(v) for v in bbox], "sentence": sentence, "rule": rule,
        "extra_json": json.dumps(extra, ensure_ascii=False),
    }


def node_rows(edges: Iterable[dict]) -> list[dict]:
    """Entity nodes from edge rows (mentions and relations of every document).

    Guarantees: one row per entity_id; `aliases` holds every surface form; `name` is the most
    frequent one (ties: the longest, then alphabetical), so the result does not depend on the
    order of the rows."""
    surfaces: dict[str, Counter] = defaultdict(Counter)
    votes: dict[str, Counter] = defaultdict(Counter)
    docs: dict[str, set] = defaultdict(set)
    mentions: Counter = Counter()
    relations: Counter = Counter()
    for e in edges:
        if e["relation"] == MENTIONS:
            extra = json.loads(e.get("extra_json") or "{}")
            eid = e["tail_id"]
            surfaces[eid].update(extra.get("surfaces") or {e["tail_text"]: 1})
            votes[eid].update(extra.get("types") or {e["tail_type"]: 1})
            docs[eid].add(e["doc_id"])
            mentions[eid] += int(extra.get("count", 1))
            continue
        rel = RELATIONS_BY_NAME.get(e["relation"])
        for eid, text, required in ((e["head_id"], e["head_text"], rel and rel.head_types),
                                    (e["tail_id"], e["tail_text"], rel and rel.tail_types)):
            surfaces[eid][text] += 0  # known surface, without inflating its count
            docs[eid].add(e["doc_id"])
            relations[eid] += 1
            if required:
                votes[eid][required[0]] += 2
    rows = []
    for eid in sorted(surfaces):
        forms = surfaces[eid]
        name = sorted(forms, key=lambda s: (-forms[s], -len(s), s))[0]
        type_votes = votes[eid]
        type_name = (sorted(type_votes, key=lambda t: (-type_votes[t], t))[0]
                     if type_votes else "ORG")
        rows.append({"entity_id": eid, "name": name, "type": type_name,
                     "aliases": sorted(forms), "doc_ids": sorted(docs[eid]),
                     "mention_count": int(mentions[eid]), "relation_count": int(relations[eid])})
    return rows
