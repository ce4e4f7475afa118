"""Intent detection: structure words in English and Chinese, relation words, entity names."""

import pytest

from h3.resources.recall.intent import (
    detect_relations,
    detect_structure,
    query_entities,
    strip_structure_words,
)


@pytest.mark.parametrize("query,kinds", [
    ("Show me the table of quarterly results", ("table",)),
    ("Which chart shows revenue by region?", ("figure",)),
    ("the diagram of the pipeline", ("figure",)),
    ("What is the loss equation?", ("formula",)),
    ("显示第3页的表格", ("table",)),
    ("图2显示了什么", ("figure",)),
    ("这个公式是什么意思", ("formula",)),
    ("请给我看收入图表", ("figure",)),
])
def test_structure_requests_are_detected(query, kinds):
    intent = detect_structure(query)
    assert intent is not None and set(kinds) <= set(intent.kinds)


@pytest.mark.parametrize("query", ["What was the total revenue in 2023?", "table of contents",
                                   "他代表公司发表了讲话", "Which company did Acme acquire?"])
def test_plain_questions_are_not_structural(query):
    assert detect_structure(query) is None


def test_numbers_and_pages_are_read():
    intent = detect_structure("What does Figure 3 show on page 4?")
    assert (intent.number, intent.page) == ("3", 4)
    assert detect_structure("表2的数据").number == "2"
    assert detect_structure("Show Figure 7-26 please").number == "7-26"
    assert strip_structure_words("Show me the table of quarterly results") == "quarterly results"


def test_relation_words():
    assert detect_relations("Which company did Acme acquire?") == ["acquired"]
    assert "ceo_of" in detect_relations("Who is the chief executive of Acme?")
    assert detect_relations("What was the revenue?") == []


def test_query_entities_prefers_the_longest_name():
    names = {"quill pharmaceuticals": ["e_q"], "quill": ["e_short"], "orion health": ["e_o"]}
    assert query_entities("Who acquired Quill Pharmaceuticals?", names) == ["e_q"]
    assert query_entities("Did Orion Health buy Quill?", names) == ["e_o", "e_short"]
    assert query_entities("华为的总部在哪里", {"华为": ["e_h"]}) == ["e_h"]


@pytest.mark.parametrize("query,kinds,number", [
    ("Show the company logo", ("figure",), None),
    ("[표 1] 감염병예방법 개정전·후 비교", ("table",), "1"),
    ("그림 4-5 보안기술 도출", ("figure",), "4-5"),
    ("図3の説明", ("figure",), "3"),
    ("figure Example 3-10 Activating RCAC", ("figure",), "3-10"),
])
def test_pictures_named_by_what_they_are_and_korean_japanese_labels(query, kinds, number):
    intent = detect_structure(query)
    assert intent is not None and intent.kinds == kinds and intent.number == number


def test_position_words_select_and_are_not_matched():
    first = detect_structure("the first figure on page 3")
    assert (first.ordinal, first.page) == (1, 3)
    assert detect_structure("the last table").ordinal == -1
    assert detect_structure("第二个图").ordinal == 2
    assert detect_structure("显示第3页的表格").ordinal is None  # 第3页 is a page
    assert strip_structure_words("the first figure on page 3 about revenue") == "revenue"
