"""Entity types of the H³ knowledge graph, their mapping from spaCy labels, and ruler patterns.

What an entity is here: a named thing mentioned in a document that recall can be asked about
("Acme Corp", "Jane Doe", "Berlin", "$4.2 billion", "Section 7.1"). Each type states its meaning
so that the graph stays consistent across documents; the spaCy model's OntoNotes labels are mapped
onto these types (`SPACY_LABEL_TO_TYPE`), labels we do not keep (ORDINAL, CARDINAL, ...) are
dropped, and `ruler_patterns()` adds EntityRuler patterns for what the small statistical model
misses (legal clauses, company names with a legal suffix, Chinese company names).

Entity identity across documents: one node per `(type, normalised name)`; `normalise_name`
strips legal suffixes, articles, possessives and case, so "Acme Corp.", "ACME Corporation" and
"Acme's" are one node whose aliases keep each surface form.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class EntityType:
    name: str
    meaning: str
    spacy_labels: tuple[str, ...]  # OntoNotes labels of en_core_web_sm that map to this type


ENTITY_TYPES: tuple[EntityType, ...] = (
    EntityType("ORG", "a company, agency, institution or other organisation", ("ORG",)),
    EntityType("PERSON", "a person, real or fictional", ("PERSON",)),
    EntityType("GPE", "a country, city, state or other place with a government; also locations",
               ("GPE", "LOC", "FAC")),
    EntityType("MONEY", "an amount of money with its currency", ("MONEY",)),
    EntityType("DATE", "an absolute or relative date or period", ("DATE", "TIME")),
    EntityType("PERCENT", "a percentage", ("PERCENT",)),
    EntityType("LAW", "a law, regulation, contract clause or section reference", ("LAW",)),
    EntityType("PRODUCT", "a product, service or software made by an organisation",
               ("PRODUCT", "WORK_OF_ART")),
    EntityType("NORP", "a nationality, religious or political group", ("NORP",)),
    EntityType("EVENT", "a named event (a war, a summit, a product launch)", ("EVENT",)),
)
TYPE_NAMES: tuple[str, ...] = tuple(t.name for t in ENTITY_TYPES)

# spaCy label -> our type; labels absent here (CARDINAL, ORDINAL, QUANTITY, LANGUAGE) are dropped.
SPACY_LABEL_TO_TYPE: dict[str, str] = {
    label: t.name for t in ENTITY_TYPES for label in t.spacy_labels
}


def type_for_spacy_label(label: str) -> str | None:
    """Our entity type for a spaCy label, or None when the label is not kept."""
    return SPACY_LABEL_TO_TYPE.get(label)


# Legal-form suffixes: part of a company's surface name, not of its identity.
ORG_SUFFIXES: tuple[str, ...] = (
    "inc", "incorporated", "corp", "corporation", "co", "company", "ltd", "limited", "llc",
    "plc", "gmbh", "ag", "sa", "nv", "bv", "holdings", "group", "lp", "llp", "pte",
)
ZH_ORG_SUFFIXES: tuple[str, ...] = (
    "股份有限公司", "有限责任公司", "有限公司", "集团", "公司", "银行", "科技",
)
_SUFFIX_RE = re.compile(
    r"(?:[\s,]+(?:" + "|".join(ORG_SUFFIXES) + r")\.?)+$", flags=re.IGNORECASE
)


def normalise_name(text: str, type_name: str = "ORG") -> str:
    """The identity key of an entity's surface form (same key -> same graph node).

    Guarantees: idempotent; case-, whitespace- and punctuation-insensitive; for ORG also drops
    legal suffixes ("Acme Holdings Inc." -> "acme"), but never to an empty string.
    """
    s = unicodedata.normalize("NFKC", text).strip()
    s = re.sub(r"[’`]", "'", s)
    s = re.sub(r"'s$", "", s)  # possessive: "Acme's" -> "Acme"
    s = re.sub(r"^(?:the)\s+", "", s, flags=re.IGNORECASE)
    if type_name == "ORG":
        stripped = _SUFFIX_RE.sub("", s)
        for suffix in ZH_ORG_SUFFIXES:
            if stripped.endswith(suffix) and len(stripped) > len(suffix) + 1:
                stripped = stripped[: -len(suffix)]
                break
        s = stripped or s
    s = re.sub(r"[^\w\s&$%.-]", " ", s.lower())
    s = re.sub(r"\s+", " ", s).strip(" .-")
    return s or text.strip().lower()


def ruler_patterns() -> list[dict]:
    """EntityRuler patterns (token patterns) that complement the statistical NER.

    Added *after* the `ner` pipe with `overwrite_ents` off, so they only fill what NER missed:
    - LAW: "Section 4.2", "Clause 7", "Article 12(b)", "Regulation (EU) 2016/679";
    - ORG: a capitalised word sequence ending in a legal suffix ("Northwind Robotics Ltd");
    - title words are not entities (roles are read by the relation rules instead).
    """
    legal_heads = ["section", "clause", "article", "paragraph", "schedule", "annex"]
    suffix_tokens = [s.capitalize() for s in ORG_SUFFIXES] + [s.upper() for s in ORG_SUFFIXES]
    suffix_tokens += [s + "." for s in suffix_tokens]
    return [
        {"label": "LAW", "pattern": [{"LOWER": {"IN": legal_heads}},
                                     {"TEXT": {"REGEX": r"^\d+(\.\d+)*(\([a-z0-9]+\))?$"}}]},
        {"label": "LAW", "pattern": [{"LOWER": "regulation"}, {"TEXT": "("}, {"IS_UPPER": True},
                                     {"TEXT": ")"}, {"TEXT": {"REGEX": r"^\d+/\d+$"}}]},
        {"label": "ORG", "pattern": [{"IS_TITLE": True, "IS_STOP": False, "OP": "+"},
                                     {"TEXT": {"IN": suffix_tokens}}]},
        # "Bluefin Analytics", "Solvant Grid Power": capitalised words ending in an industry word
        {"label": "ORG", "pattern": [{"IS_TITLE": True, "IS_STOP": False},
                                     {"IS_TITLE": True, "IS_STOP": False, "OP": "{0,2}"},
                                     {"LOWER": {"IN": list(ORG_HEAD_WORDS)}, "IS_TITLE": True}]},
    ]


# Industry words that end many company names; a capitalised phrase ending in one is an ORG.
ORG_HEAD_WORDS: frozenset[str] = frozenset({
    "analytics", "airlines", "airways", "bank", "batteries", "biotech", "brands", "cable",
    "capital", "chemicals", "communications", "computing", "devices", "electronics", "energy",
    "engineering", "farms", "financial", "foods", "grid", "health", "healthcare", "industries",
    "insurance", "labs", "laboratories", "logistics", "materials", "media", "medical", "minerals",
    "mining", "motors", "networks", "pay", "payments", "pharma", "pharmaceuticals", "photonics",
    "power", "robotics", "semiconductor", "semiconductors", "shipping", "software", "solutions",
    "systems", "technologies", "telecom", "therapeutics", "ventures", "wireless",
})


# Types whose members are *names*: the small NER model often confuses them ("Bluefin Analytics"
# tagged PERSON), so a name's identity does not include its type; the node's type is decided by
# a vote over its mentions and the relations it takes part in (resources/graph/build.py).
NAME_TYPES: frozenset[str] = frozenset({"ORG", "PERSON", "GPE", "PRODUCT", "NORP", "EVENT"})


def entity_id(type_name: str, text: str) -> str:
    """The node id of an entity: the same normalised name (and, for values such as MONEY or
    DATE, the same type) gives the same id in every document."""
    import hashlib

    kind = "NAME" if type_name in NAME_TYPES else type_name
    key = f"{kind}|{normalise_name(text, 'ORG' if kind == 'NAME' else type_name)}"
    return "e_" + hashlib.sha1(key.encode("utf-8")).hexdigest()[:16]
