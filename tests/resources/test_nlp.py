"""NER + relation extraction on text (real spaCy en_core_web_sm, ~2 s to load once)."""

import json
from pathlib import Path

import pytest

from h3.ontology.entities import entity_id, normalise_name
from h3.resources.nlp.extract import TextUnit, extract
from h3.resources.nlp.relations import find_relations, mask

KG = Path(__file__).resolve().parents[1] / "fixtures" / "kg"
BOX = (72.0, 100.0, 523.0, 160.0)


def triples(texts: list[str], doc_id: str = "d1") -> set[tuple[str, str, str]]:
    ex = extract([TextUnit(doc_id, 1, BOX, t) for t in texts])
    return {(normalise_name(e.head_text), e.relation, normalise_name(e.tail_text))
            for e in ex.edges}


@pytest.mark.parametrize("sentence,expected", [
    ("Northwind Robotics acquired Bluefin Analytics for $420 million.",
     ("northwind robotics", "acquired", "bluefin analytics")),
    ("Quill Pharmaceuticals, which is based in Basel, was acquired by Orion Health Group.",
     ("orion health", "acquired", "quill pharmaceuticals")),
    ("Maria Kovacs, chief executive of Northwind Robotics, spoke on Tuesday.",
     ("maria kovacs", "ceo_of", "northwind robotics")),
    ("Tandem Motors chief executive Hiroshi Tanaka said the deal was good.",
     ("hiroshi tanaka", "ceo_of", "tandem motors")),
    ("Vantage Telecom, a Dublin-based operator, reported a profit.",
     ("vantage telecom", "headquartered_in", "dublin")),
    ("Solvant Grid is a wholly owned subsidiary of Meridian Power Holdings.",
     ("solvant grid", "subsidiary_of", "meridian power")),
])
def test_one_sentence_one_fact(sentence, expected):
    assert expected in triples([sentence])


def test_no_relation_without_a_pattern_and_never_to_a_date_or_amount():
    found = triples(["Analysts expect Northwind Robotics revenue to grow 12% in 2025.",
                     "Acme Corp met Beta Ltd in March 2024 to discuss $5 million."])
    assert found == set()


def test_conjoined_objects_each_get_an_edge():
    found = triples(["Atlas Semiconductor supplies memory chips to Tandem Motors and to "
                     "Helix Devices."])
    assert {("atlas semiconductor", "supplies", "tandem motors"),
            ("atlas semiconductor", "supplies", "helix devices")} <= found


def test_the_company_refers_to_the_last_organisation_named():
    found = triples(["Tandem Motors is based in Nagoya.",
                     "The company also partnered with Arclight Software on new tools."])
    assert ("tandem motors", "partner_of", "arclight software") in found


def test_short_names_resolve_to_the_full_name_within_a_document():
    ex = extract([TextUnit("d1", 1, BOX, "Elena Petrova joined Quill Pharmaceuticals."),
                  TextUnit("d1", 1, BOX, "Petrova previously ran a unit of Castellan Biotech.")])
    ids = {m.text: m.entity_id for m in ex.mentions}
    assert ids["Petrova"] == ids["Elena Petrova"] == entity_id("PERSON", "Elena Petrova")


def test_edges_carry_provenance_and_the_same_entity_has_one_id_across_documents():
    a = extract([TextUnit("doc-a", 3, BOX, "Greenleaf Foods has bought Orchard Valley Farms.")])
    b = extract([TextUnit("doc-b", 1, BOX, "Greenleaf Foods is headquartered in Minneapolis.")])
    (ea,), (eb,) = a.edges, b.edges
    assert (ea.doc_id, ea.page, ea.bbox) == ("doc-a", 3, BOX)
    assert ea.sentence.startswith("Greenleaf Foods has bought")
    assert ea.head_id == eb.head_id


def test_mask_and_patterns_directly():
    sentence = "Acme was acquired by Globex."
    masked = mask(sentence, [(0, 4), (21, 27)])
    assert masked == "⟨E0⟩ was acquired by ⟨E1⟩."
    (match,) = find_relations(masked, ["ORG", "ORG"])
    assert (match.head, match.relation, match.tail) == (1, "acquired", 0)
    assert find_relations(masked, ["ORG", "DATE"]) == []


def test_chinese_rules():
    found = triples(["阿里巴巴集团收购了优酷土豆公司。华为技术有限公司的总部位于深圳市。"
                     "腾讯公司与京东集团达成战略合作。"])
    assert ("阿里巴巴", "acquired", "优酷土豆") in found
    assert ("华为技术", "headquartered_in", "深圳市") in found
    assert ("腾讯", "partner_of", "京东") in found


@pytest.mark.parametrize("name", ["company_news.json", "company_news_heldout.json"])
def test_labelled_articles_all_facts_and_nothing_else(name):
    data = json.loads((KG / name).read_text())
    found: set = set()
    for doc in data["documents"]:
        found |= triples(doc["paragraphs"], doc["name"])
    facts = {(normalise_name(h), r, normalise_name(t)) for h, r, t in data["facts"]}
    recall = len(facts & found) / len(facts)
    precision = len(facts & found) / max(1, len(found))
    assert recall >= 0.9 and precision >= 0.9, (facts - found, found - facts)
