"""The ontology: entity types and their spaCy mapping, name normalisation, relation patterns."""

import re

import pytest

from h3.ontology.entities import (
    ENTITY_TYPES,
    SPACY_LABEL_TO_TYPE,
    entity_id,
    normalise_name,
    ruler_patterns,
    type_for_spacy_label,
)
from h3.ontology.relations import RELATION_TYPES, RELATIONS_BY_NAME, Edge


def test_every_spacy_label_maps_to_one_declared_type():
    names = {t.name for t in ENTITY_TYPES}
    assert set(SPACY_LABEL_TO_TYPE.values()) <= names
    assert type_for_spacy_label("ORG") == "ORG"
    assert type_for_spacy_label("LOC") == "GPE"
    assert type_for_spacy_label("CARDINAL") is None  # dropped on purpose
    assert all(t.meaning for t in ENTITY_TYPES)


@pytest.mark.parametrize("a,b", [
    ("Acme Corp.", "ACME Corporation"), ("Acme's", "Acme"), ("The Acme Group", "acme"),
    ("Northwind  Robotics Ltd", "northwind robotics"), ("华为技术有限公司", "华为技术"),
])
def test_surface_forms_of_one_company_share_a_key(a, b):
    assert normalise_name(a) == normalise_name(b)
    assert entity_id("ORG", a) == entity_id("ORG", b)


def test_names_ignore_the_ner_type_but_values_do_not():
    # the small model tags "Bluefin Analytics" PERSON in one sentence and ORG in another
    assert entity_id("PERSON", "Bluefin Analytics") == entity_id("ORG", "Bluefin Analytics")
    assert entity_id("DATE", "2019") != entity_id("MONEY", "2019")
    assert entity_id("ORG", "Acme") != entity_id("ORG", "Apex")


def test_normalise_is_idempotent_and_never_empty():
    for text in ["Inc.", "  The Co ", "Acme Holdings Inc.", "$4.2 billion"]:
        once = normalise_name(text)
        assert once and normalise_name(once) == once


def test_relation_types_are_documented_and_their_patterns_compile():
    assert {"acquired", "ceo_of", "headquartered_in", "partner_of", "supplies",
            "subsidiary_of", "mentions"} <= set(RELATIONS_BY_NAME)
    for rel in RELATION_TYPES:
        assert rel.meaning and rel.head_types
        for pattern in rel.patterns:
            assert "{H}" in pattern and "{T}" in pattern, (rel.name, pattern)
            re.compile(pattern.replace("{H}", "(?P<h>x)").replace("{T}", "(?P<t>y)"))


def test_ruler_patterns_are_entity_ruler_shaped():
    patterns = ruler_patterns()
    assert {p["label"] for p in patterns} <= {"ORG", "LAW"}
    assert all(isinstance(p["pattern"], list) for p in patterns)


def test_an_edge_without_provenance_is_refused():
    ok = dict(head_id="e_1", tail_id="e_2", relation="acquired", head_text="A", tail_text="B",
              doc_id="d", page=1, bbox=(0, 0, 1, 1), sentence="A acquired B.", rule="x")
    Edge(**ok)
    with pytest.raises(ValueError, match="provenance"):
        Edge(**{**ok, "sentence": ""})
    with pytest.raises(ValueError, match="unknown relation"):
        Edge(**{**ok, "relation": "likes"})
