"""Chinese entities and relations by rules (no trained Chinese spaCy pipeline exists offline).

Organisations are recognised by their legal or sector suffix (公司, 集团, 银行, ...), people by
their position next to a role word (首席执行官, 总裁), places after 总部位于. Each relation is one
regex over the sentence with named groups; the covered phrasings are listed in `_RULES`.
"""

from __future__ import annotations

import re

from ontology.document import BBox
from ontology.entities import ZH_ORG_SUFFIXES, entity_id
from ontology.relations import Edge

_ORG = r"[\u4e00-\u9fffA-Za-z0-9]{1,12}?(?:" + "|".join(ZH_ORG_SUFFIXES) + r")"
_PERSON = r"[\u4e00-\u9fff]{2,4}"
_PLACE = r"[\u4e00-\u9fff]{2,6}?(?:市|省|区|州)?"
_ROLE = r"(?:首席执行官|CEO|总裁|总经理)"
_END = r"(?=[，。、；！？,.\s]|$|在|于)"

# (relation, regex); groups h = head, t = tail, with their entity types
_RULES: tuple[tuple[str, str, str, str], ...] = (
    ("acquired", rf"(?P<h>{_ORG})(?:已|宣布|正式|完成)?(?:收购|并购)了?(?P<t>{_ORG})", "ORG", "ORG"),
    ("acquired", rf"(?P<t>{_ORG})被(?P<h>{_ORG})(?:收购|并购)", "ORG", "ORG"),
    ("ceo_of", rf"(?P<t>{_ORG})的?{_ROLE}(?:是|为)?(?P<h>{_PERSON}){_END}", "PERSON", "ORG"),
    ("ceo_of", rf"(?P<h>{_PERSON})(?:担任|出任|是|为)(?P<t>{_ORG})的?{_ROLE}", "PERSON", "ORG"),
    ("headquartered_in", rf"(?P<h>{_ORG})的?总部(?:设在|设于|位于|在)(?P<t>{_PLACE}){_END}",
     "ORG", "GPE"),
    ("partner_of", rf"(?P<h>{_ORG})(?:与|和|同)(?P<t>{_ORG})(?:达成|签署|建立|宣布|开展)?了?"
     r"(?:战略)?合作", "ORG", "ORG"),
    ("subsidiary_of", rf"(?P<h>{_ORG})是(?P<t>{_ORG})的(?:全资)?子公司", "ORG", "ORG"),
    ("supplies", rf"(?P<h>{_ORG})(?:向|为)(?P<t>{_ORG})(?:供应|提供)", "ORG", "ORG"),
    ("founder_of", rf"(?P<t>{_ORG})(?:由|是由)(?P<h>{_PERSON})(?:创立|创办|创建)", "PERSON", "ORG"),
)
_COMPILED = [(rel, re.compile(rx), ht, tt) for rel, rx, ht, tt in _RULES]
_ORG_RE = re.compile(_ORG)


def extract_sentence(sentence: str, doc_id: str, page: int, bbox: BBox):
    """(mentions, edges) of one Chinese sentence; mentions are the organisations found by suffix
    plus every head/tail a relation rule names."""
    from resources.nlp.extract import Mention

    sentence = sentence.strip()
    spans: dict[tuple[int, int], str] = {}
    edges: list[Edge] = []
    for rel, regex, head_type, tail_type in _COMPILED:
        for m in regex.finditer(sentence):
            h, t = m.group("h"), m.group("t")
            spans[m.span("h")] = head_type
            spans[m.span("t")] = tail_type
            edges.append(Edge(entity_id(head_type, h), entity_id(tail_type, t), rel, h, t,
                              doc_id, page, bbox, sentence, rule=f"zh:{rel}"))
    for m in _ORG_RE.finditer(sentence):
        if not any(s <= m.start() < e for s, e in spans):
            spans[m.span()] = "ORG"
    mentions = [
        Mention(entity_id(type_name, sentence[s:e]), sentence[s:e], type_name, doc_id, page, bbox,
                sentence, s, e)
        for (s, e), type_name in sorted(spans.items())
    ]
    return mentions, edges
