"""Relation types of the H³ knowledge graph: who did what to whom, and how a sentence says it.

An edge is `(head) -[relation]-> (tail)` between two entity nodes, always with provenance: the
document, page, bounding box and the sentence that states it (`Edge` below). Each relation type
documents its meaning, the entity types it connects and the sentence patterns that express it
(regexes over the sentence with each mention masked as a tag, `{H}` = head, `{T}` = tail; one
pattern per phrasing: active, passive, appositive, possessive, "X-based"). The query words let
recall recognise which relation a question asks about.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from h3.ontology.document import BBox


@dataclass(frozen=True, slots=True)
class RelationType:
    name: str
    meaning: str
    head_types: tuple[str, ...]
    tail_types: tuple[str, ...]
    # Regexes over the *masked* sentence, where every entity mention is replaced by a tag such as
    # "⟨E3⟩": `{H}` marks the head mention and `{T}` the tail (see resources/nlp/relations.py).
    patterns: tuple[str, ...] = ()
    query_words: tuple[str, ...] = ()  # words in a question that ask for this relation
    symmetric: bool = False


# Building blocks of the patterns (case-insensitive).
ROLE = r"(?:chief\s+executive(?:\s+officer)?|ceo|c\.e\.o\.|managing\s+director)"
CFO = r"(?:chief\s+financial\s+officer|cfo|c\.f\.o\.)"
CHAIR = r"(?<!vice\s)(?:chairman|chairwoman|chairperson|chair)(?:\s+of\s+the\s+board)?"
WORDS = r"(?:[\w$.,%-]+\s+)"  # one plain word (never an entity tag) and its space
ASIDE = r"(?:\s*,[^,;]{0,80},)?"  # an optional ", which is based in X," between subject and verb
# auxiliaries and intentions before the verb: "has agreed to", "will", "is set to", "also"
AUX = (r"(?:\s+(?:has|have|had|will|would|also|now|recently|finally|previously|already))*"
       r"(?:\s+(?:agreed|agrees|plans|planned|intends|intended|is\s+set|is\s+expected|"
       r"announced\s+(?:it\s+)?(?:would|will)|is|are|was|wants|offered|moved)\s+to)?")
_ORG = ("ORG",)
RELATION_TYPES: tuple[RelationType, ...] = (
    RelationType(
        "acquired", "the head organisation bought (all or a controlling part of) the tail",
        _ORG, _ORG + ("PRODUCT",),
        patterns=(
            r"{H}" + ASIDE + AUX + r"\s+(?:acquired?|acquires|bought|buys?|"
            r"purchased?|purchases|took\s+over|takes\s+over|snapped\s+up)\s+(?:the\s+)?"
            + WORDS + r"{0,2}?{T}",
            r"{H}\s+(?:has\s+|had\s+)?(?:completed|announced|closed|finali[sz]ed|agreed)\s+"
            r"(?:its|the|a|an)\s+" + WORDS + r"{0,3}?(?:acquisition|purchase|takeover)\s+of\s+{T}",
            r"{H}(?:\s*'s|’s)?\s+(?:acquisition|purchase|takeover)\s+of\s+{T}",
            r"{T}" + ASIDE + r"\s*,?\s+(?:was|were|has\s+been|had\s+been|is\s+being|will\s+be|"
            r"is\s+to\s+be|agreed\s+to\s+be)\s+(?:acquired|bought|purchased|taken\s+over)\s+"
            r"(?:" + WORDS + r"{0,3}?)?by\s+{H}",
            r"(?:acquisition|purchase|takeover)\s+of\s+{T}\s+by\s+{H}",
        ),
        query_words=("acquire", "acquired", "acquisition", "bought", "buy", "purchase",
                     "takeover", "take over", "took over", "收购", "并购"),
    ),
    RelationType(
        "ceo_of", "the head person is the chief executive of the tail organisation",
        ("PERSON",), _ORG,
        patterns=(
            r"{H}\s*,\s*(?:the\s+|its\s+)?(?:new\s+|current\s+|former\s+|interim\s+)?" + ROLE
            + r"\s+(?:of|at)\s+{T}",
            r"{H}\s+(?:is|was|became|has\s+been|will\s+become|will\s+be|remains|serves\s+as|"
            r"was\s+named|was\s+appointed|has\s+been\s+(?:named|appointed)|took\s+over\s+as)\s+"
            r"(?:as\s+)?(?:the\s+)?(?:new\s+|interim\s+)?" + ROLE + r"\s+(?:of|at)\s+{T}",
            r"{T}(?:\s*'s|’s)?\s*,?\s+(?:new\s+|current\s+)?" + ROLE + r"\s*,?\s+{H}",
            r"(?:the\s+)?" + ROLE + r"\s+(?:of|at)\s+{T}\s*,\s*{H}",
            r"{T}\s+(?:is|was|has\s+been)\s+(?:run|led|headed)\s+by\s+(?:(?:its\s+)?" + ROLE
            + r"\s+)?{H}",
            r"{T}\s+(?:named|appointed|hired)\s+{H}\s+(?:as\s+)?(?:its\s+)?(?:new\s+)?" + ROLE,
        ),
        query_words=("ceo", "chief executive", "c.e.o", "boss", "runs", "leads", "heads",
                     "managing director", "首席执行官", "总裁", "总经理"),
    ),
    RelationType(
        "chair_of", "the head person chairs the tail organisation's board",
        ("PERSON",), _ORG,
        patterns=(
            r"{H}\s*,\s*(?:the\s+|its\s+)?(?:new\s+|current\s+|executive\s+|non-executive\s+)?"
            + CHAIR + r"\s+(?:of|at)\s+{T}",
            r"{H}\s+(?:is|was|became|has\s+been|remains|serves\s+as|was\s+(?:named|elected))\s+"
            r"(?:as\s+)?(?:the\s+)?(?:new\s+)?" + CHAIR + r"\s+of\s+{T}",
            r"{T}(?:\s*'s|’s)?\s+(?:new\s+|current\s+|executive\s+)?" + CHAIR + r"\s*,?\s+{H}",
        ),
        query_words=("chairman", "chairwoman", "chairperson", "chair of the board", "chair of",
                     "chair", "董事长", "董事局主席"),
    ),
    RelationType(
        "headquartered_in", "the head organisation's headquarters are in the tail place",
        _ORG, ("GPE",),
        patterns=(
            r"{H}" + ASIDE + r"\s*,?\s+(?:which\s+is\s+|that\s+is\s+|is\s+|was\s+|are\s+)?"
            r"(?:headquartered|based)\s+in\s+{T}",
            r"{H}\s*,?\s+(?:which\s+|that\s+)?(?:has|have)\s+(?:its|their)\s+"
            r"(?:headquarters|head\s+office)\s+in\s+{T}",
            r"{H}(?:\s*'s|’s)\s+(?:headquarters|head\s+office)\s+(?:is|are)\s+in\s+{T}",
            r"{T}\s*-\s*based\s+" + WORDS + r"{0,2}?{H}",
            r"{H}\s*,\s*(?:an?|the)\s+{T}\s*-\s*based",
            r"{H}\s*,\s*(?:an?|the)\s+" + WORDS + r"{0,3}?(?:headquartered|based)\s+in\s+{T}",
        ),
        query_words=("headquarter", "headquarters", "headquartered", "based", "hq", "where is",
                     "head office", "总部"),
    ),
    RelationType(
        "partner_of", "the two organisations announced or run a partnership",
        _ORG, _ORG,
        patterns=(
            r"{H}\s+(?:has\s+|have\s+|will\s+|is\s+)?(?:announced|formed|signed|entered"
            r"(?:\s+into)?|agreed|struck|launched)?\s*(?:a|an|its)?\s*(?:new\s+)?(?:strategic\s+)?"
            r"(?:partnership|alliance|joint\s+venture|collaboration)\s+with\s+{T}",
            r"{H}" + AUX + r"\s+(?:partnered|partner|teamed\s+up|team\s+up|collaborated|"
            r"collaborate|allied|partners|is\s+partnering|will\s+partner)\s+with\s+{T}",
            r"{H}\s+and\s+{T}\s+(?:have\s+|will\s+)?(?:announced|formed|signed|agreed|entered)"
            r"\s+(?:into\s+)?(?:a|an)?\s*" + WORDS + r"{0,2}?(?:partnership|alliance|joint\s+venture)",
            r"(?:partnership|alliance|joint\s+venture)\s+between\s+{H}\s+and\s+{T}",
        ),
        query_words=("partner", "partners", "partnership", "partnered", "partnering", "alliance",
                     "collaborate", "joint venture", "teamed up", "合作", "伙伴"),
        symmetric=True,
    ),
    RelationType(
        "supplies", "the head organisation supplies goods or services to the tail",
        _ORG, _ORG,
        patterns=(
            r"{H}" + AUX + r"\s+(?:supplies|supplied|supply|provides|provided|provide|sells|sold|"
            r"sell)\s+" + WORDS
            + r"{0,4}?(?:to|for)\s+{T}",
            r"{H}" + ASIDE + r"\s+(?:is|was|has\s+been|had\s+been|became|will\s+become|remains)"
            r"\s+(?:a|the|an)\s+(?:(?:key|main|major|sole|exclusive|long-time|leading)\s+)?"
            r"(?:supplier|vendor|provider)\s+" + WORDS + r"{0,3}?(?:to|for|of)\s+{T}",
            r"{H}\s*,\s*(?:a|the)\s+(?:key\s+|main\s+)?(?:supplier|vendor)\s+(?:to|of)\s+{T}",
            r"{T}\s+(?:buys|bought|sources|sourced|purchases|purchased)\s+" + WORDS
            + r"{0,4}?from\s+{H}",
        ),
        query_words=("supplier", "suppliers", "supplies", "supply", "supplied", "vendor", "供应"),
    ),
    RelationType(
        "subsidiary_of", "the head organisation is owned (majority) by the tail",
        _ORG, _ORG,
        patterns=(
            r"{H}" + ASIDE + r"\s*,?\s+(?:is\s+|was\s+|became\s+|will\s+operate\s+as\s+|"
            r"operates\s+as\s+|will\s+become\s+|has\s+become\s+)?(?:now\s+)?(?:a|an|the)\s+"
            r"(?:wholly[\s-]owned\s+|majority[\s-]owned\s+)?(?:subsidiary|unit|division|arm)\s+of\s+{T}",
            r"{T}(?:\s*'s|’s)\s+(?:wholly[\s-]owned\s+)?(?:subsidiary|unit|division)\s*,?\s+{H}",
        ),
        query_words=("subsidiary", "subsidiaries", "parent", "owned by", "owns", "unit of",
                     "子公司", "母公司"),
    ),
    RelationType(
        "founder_of", "the head person founded (or co-founded) the tail organisation",
        ("PERSON",), _ORG,
        patterns=(
            r"{T}\s+(?:was\s+)?(?:co-?)?founded\s+(?:in\s+\S+\s+)?by\s+{H}",
            r"{H}\s*,\s*(?:the\s+|a\s+)?(?:co-?)?founder\s+of\s+{T}",
            r"{H}\s+(?:co-?)?founded\s+{T}",
            r"{T}\s+(?:co-?)?founder\s+{H}",
        ),
        query_words=("founder", "founded", "co-founder", "cofounder", "started", "创始人", "创立"),
    ),
    # Offices in the issuer, found mostly by resources/nlp/roles.py (lists, tables, signature
    # blocks, quotes); the patterns here catch the news-style phrasings.
    RelationType(
        "cfo_of", "the head person is the chief financial officer of the tail organisation",
        ("PERSON",), _ORG,
        patterns=(
            r"{H}\s*,\s*(?:the\s+|its\s+)?(?:new\s+|current\s+|interim\s+)?" + CFO
            + r"\s+(?:of|at)\s+{T}",
            r"{T}(?:\s*'s|’s)?\s*,?\s+(?:new\s+|current\s+)?" + CFO + r"\s*,?\s+{H}",
        ),
        query_words=("cfo", "chief financial", "finance chief", "c.f.o", "财务总监", "首席财务官"),
    ),
    RelationType(
        "director_of", "the head person sits on the tail organisation's board of directors",
        ("PERSON",), _ORG,
        patterns=(r"{H}\s*,\s*(?:a\s+)?(?:member\s+of\s+the\s+board|director)\s+of\s+{T}",),
        query_words=("director", "directors", "board member", "on the board", "董事"),
    ),
    RelationType(
        "appointed_to", "the head person was appointed to an office of the tail organisation "
        "(the office in extra.role)",
        ("PERSON",), _ORG,
        patterns=(r"{T}\s+(?:appointed|named|hired|elected)\s+{H}\s+(?:as\s+)?",),
        query_words=("appointed", "appoint", "named", "hired", "elected", "任命"),
    ),
    RelationType(
        "mentions", "the document mentions the entity (one edge per document, entity and page)",
        ("DOCUMENT",), (),
    ),
)
RELATIONS_BY_NAME: dict[str, RelationType] = {r.name: r for r in RELATION_TYPES}


@dataclass(frozen=True, slots=True)
class Edge:
    """One extracted relation, with the evidence recall shows for it."""

    head_id: str  # entity id (ontology.entities key), or "doc:<doc_id>" for `mentions`
    tail_id: str
    relation: str
    head_text: str
    tail_text: str
    doc_id: str
    page: int
    bbox: BBox
    sentence: str
    rule: str  # which rule found it: "dep:<verb>", "surface:<relation>", "zh:<relation>"
    extra: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.relation not in RELATIONS_BY_NAME:
            raise ValueError(f"unknown relation {self.relation!r}; allowed: {list(RELATIONS_BY_NAME)}")
        if not self.doc_id or self.page < 1 or not self.sentence:
            raise ValueError("an edge needs provenance: doc_id, 1-based page and the sentence")
