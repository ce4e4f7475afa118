"""Structural recall's pure scoring parts: CJK matching, "the first/last figure", "the logo"."""

from h3.resources.recall.intent import detect_structure
from h3.resources.recall.structure import _ordinal_ids, _position_bonus, cjk_grams, match_share


def row(rid, doc, page, bbox, kind="figure"):
    return {"region_id": rid, "doc_id": doc, "page": page, "bbox": bbox, "kind": kind}


def test_korean_and_chinese_words_match_by_bigrams():
    assert cjk_grams("감염병예방법") == {"감염", "염병", "병예", "예방", "방법"}
    grams = cjk_grams("감염병예방법 개정")
    assert match_share([], grams, "[표 1] 감염병예방법 제2조제2호 개정전·후 비교") == 1.0
    assert match_share([], grams, "보험금 지급문제") == 0.0
    assert match_share(["revenue"], cjk_grams("收入"), "Revenue by quarter 收入") == 1.0
    assert cjk_grams("sales in € and ™ marks $") == {"€", "™"}  # ASCII $ is not a symbol here
    assert match_share([], cjk_grams("®"), "IBM ® logo") == 1.0


def test_first_and_last_follow_reading_order_per_document():
    rows = [row("a2", "A", 2, [0, 50, 10, 60]), row("a1", "A", 1, [0, 500, 10, 510]),
            row("a3", "A", 2, [0, 400, 10, 410]), row("b1", "B", 5, [0, 0, 10, 10])]
    assert _ordinal_ids(rows, 1) == {"a1", "b1"}
    assert _ordinal_ids(rows, 2) == {"a2"}
    assert _ordinal_ids(rows, -1) == {"a3", "b1"}


def test_a_logo_prefers_small_pictures():
    intent = detect_structure("the logo on the back cover")
    small, large = row("s", "A", 1, [480, 20, 560, 60]), row("l", "A", 1, [0, 200, 612, 792])
    assert _position_bonus(intent, small, set()) > _position_bonus(intent, large, set()) == 0.0
    assert _position_bonus(detect_structure("the figure"), small, set()) == 0.0
    assert _position_bonus(intent, large, {"l"}) > 0.0  # an ordinal pick counts too
