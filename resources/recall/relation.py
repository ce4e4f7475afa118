"""Relation recall: entities named in the query -> their knowledge-graph neighbours -> the
sentences that state each edge (hit bbox = the region holding the sentence).

"Which company did Northwind Robotics acquire?" names one entity (found by its normalised name
or an alias in the `entities` table) and asks for one relation (`acquired`, from the ontology's
query words); edges of that relation touching the entity rank first, with the entity on the
side the question implies; other edges of the entity follow as context (in `h3 recall`'s auto
mode: after every intent's answers, `Ranked.context`).
"""

from __future__ import annotations

import re
from collections import Counter

from h3.ontology.document import Hit
from h3.ontology.entities import entity_id
from h3.ontology.relations import RELATIONS_BY_NAME
from h3.resources.graph.build import MENTIONS
from h3.resources.recall.gazetteer import gazetteer
from h3.resources.recall.intent import detect_relations, query_entities
from h3.resources.recall.router import Ranked, RecallContext, register_intent
from h3.resources.store.base import sql_str
from h3.resources.store.tables import EDGES

# "who acquired X", "X was acquired by": the named entity is the tail of the asked relation
_ASKS_FOR_HEAD = re.compile(
    r"\bwho\s+(?:has\s+|had\s+)?(?:acquired|bought|purchased|owns|founded|supplies|took over)\b|"
    r"\b(?:acquired|bought|purchased|founded|owned|supplied)\s+by\b|\bsubsidiary of which\b|"
    r"\bparent\b|\bwho\s+(?:is|are)\s+(?:the\s+)?suppliers?\b", re.IGNORECASE)
def relation_recall(ctx: RecallContext, query: str, k: int) -> list[Hit]:
    """Edges touching the entities the query names, best first (see the module docstring)."""
    return [hit for hit, _ in _ranked_edges(ctx, query, k)]


def relation_intent(ctx: RecallContext, query: str, k: int) -> Ranked:
    """The router's handler: edges of the asked relation as answers, the others as context."""
    ranked = _ranked_edges(ctx, query, k)
    return Ranked([h for h, asked in ranked if asked], [h for h, asked in ranked if not asked])


def _ranked_edges(ctx: RecallContext, query: str, k: int) -> list[tuple[Hit, bool]]:
    """The k best edges as hits, each with whether it is of a relation the query asks for."""
    if "_gazetteer" not in ctx.cache:  # one check of the graph's version per context
        ctx.cache["_gazetteer"] = gazetteer(ctx.store)
    ids = query_entities(query, ctx.cache["_gazetteer"])
    named_in_graph = bool(ids)
    asked = detect_relations(query)
    issuer_docs: list[str] = []
    preference: dict[str, int] = {}  # doc_id -> its place in the routing's order
    if asked:  # "who is the CFO of <a short form of an issuer>": the routed documents' issuer
        from h3.resources.recall.documents import document_profiles, route

        routed = route(ctx, query)
        if routed.by.startswith("company"):
            issuer_docs = routed.doc_ids or []
            preference = {d: i for i, d in enumerate(issuer_docs)}
            profiles = document_profiles(ctx)
            ids += [i for i in {entity_id("ORG", profiles[d].issuer) for d in issuer_docs
                                if profiles[d].issuer} if i not in ids]
    if not ids:
        return []
    asks_for_head = bool(_ASKS_FOR_HEAD.search(query))
    id_list = ", ".join(sql_str(i) for i in ids)
    key = ("_edges", id_list)  # the edges of these entities, read once per context
    if key not in ctx.cache:
        ctx.cache[key] = ctx.store.rows(
            EDGES.name, f"relation != {sql_str(MENTIONS)} AND "
                        f"(head_id IN ({id_list}) OR tail_id IN ({id_list}))")
    rows = ctx.cache[key]
    # how many statements back each (document, relation, person): the current officer is named
    # in the officer list, the signatures and the certifications; a past one once or twice
    support = Counter((r["doc_id"], r["relation"], r["head_id"]) for r in rows)
    scored = []
    for row in rows:
        if row["doc_id"] not in ctx.ok_doc_ids:
            continue
        if not named_in_graph and row["relation"] not in asked:
            continue  # an issuer found by routing only: its edges of the asked relation alone
        named_is_head = row["head_id"] in ids
        rel = RELATIONS_BY_NAME[row["relation"]]
        # the score orders this intent's own hits (the router fuses intents by rank); it is
        # also what `h3 recall` shows and its weak-match mark reads
        score = 0.35  # a neighbour the question did not ask about: context
        if row["relation"] in asked:
            score = 1.5
            # the side the question names: "which company did X acquire" names the head;
            # "who is the CEO of X" names an organisation, the tail of ceo_of
            named_should_be_head = (not asks_for_head) and rel.head_types != ("PERSON",)
            if rel.symmetric or named_is_head == named_should_be_head:
                score += 0.3
        score += 0.05 * (row["head_id"] in ids and row["tail_id"] in ids)
        if row["relation"] in asked:
            # better supported first; of one person's statements, the earliest page (the
            # officer list comes before signature pages and exhibits)
            score += 0.02 * min(support[(row["doc_id"], row["relation"], row["head_id"])], 5)
            score -= 0.00001 * int(row["page"])
            score += 0.05 * (row["doc_id"] in issuer_docs)
            # of the company's filings, the one the routing prefers first (the period and form
            # the question names, else the latest: who holds an office now), then the others
            if row["doc_id"] in preference:
                score += 0.2 * (1.0 - preference[row["doc_id"]] / len(preference))
        scored.append((score, row))
    scored.sort(key=lambda sr: (-sr[0], sr[1]["doc_id"], sr[1]["page"], sr[1]["edge_id"]))
    hits: list[tuple[Hit, bool]] = []
    for score, row in scored[:k]:
        entities = ({"text": row["head_text"], "label": row["head_type"], "role": "head",
                     "relation": row["relation"]},
                    {"text": row["tail_text"], "label": row["tail_type"], "role": "tail",
                     "relation": row["relation"]})
        hit = Hit(doc_id=row["doc_id"], source=ctx.doc_sources.get(row["doc_id"], ""),
                  page=int(row["page"]), bbox=tuple(float(v) for v in row["bbox"]),
                  kind="text", text=row["sentence"], score=score, via="relation",
                  entities=entities)
        hits.append((hit, row["relation"] in asked))
    return hits


def detect_relation(query: str) -> bool:
    """Fires when the query names an entity of the knowledge graph (of the default store,
    $H3_HOME/lancedb: the router's detectors see only the query). A store without a graph yet
    names nothing; one that cannot be read raises, and the router says so in the result
    ("relation lookup failed: ...") instead of answering as if the graph were empty."""
    from h3.resources.store import open_store

    # a relation question about an issuer short form the graph may not know as a name
    return bool(detect_relations(query)) or bool(
        query_entities(query, gazetteer(open_store())))


register_intent("relation", relation_intent, detect=detect_relation)
