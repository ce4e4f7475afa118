"""Chinese text handling without ingestion: language detection, full-text forms, entity and
relation rules, OCR text joining, config validation, and the multilingual model staying unloaded
for English (issue 15). The end-to-end test is tests/pipelines/test_chinese_e2e.py."""

from __future__ import annotations

import pytest

from h3.resources.nlp.extract import TextUnit, extract
from h3.resources.recall.intent import detect_structure
from h3.resources.settings import Settings
from h3.resources.text_lang import (
    detect_language,
    document_language,
    fts_form,
    han_bigrams,
    join_spaced_han,
    word_count,
)
from h3_runtime.config import ConfigError

BOX = (10.0, 20.0, 300.0, 40.0)


def test_language_of_chunks_and_documents():
    assert detect_language("华腾科技股份有限公司2023年营业收入为12.5亿元。") == "zh"
    assert detect_language("Revenue rose 12% to $4.1 billion in 2023.") == "en"
    # a Chinese paragraph quoting English names stays Chinese; numbers alone are undetermined
    assert detect_language("公司与Volta Motors签署了供货协议。") == "zh"
    assert detect_language("2023 | 949.5 | 31.6%") == "und"
    assert detect_language("개정 이유는 질환의 특성별 ‘군(群)’별로 구분") == "ko"  # Hanja inside
    assert detect_language("東京都の人口は増えています") == "ja"
    assert document_language(["这是中文段落，内容较长。" * 10, "Table A"]) == "zh"
    assert document_language(["中文内容" * 10, "English body text " * 10]) == "mixed"


def test_full_text_form_segments_han_and_leaves_english_alone():
    for other in ("The pump pressure is 4 bar.", "개정 이유는 ‘군(群)’별로", "Tokyo (東京) grew"):
        assert fts_form(other) == other  # indexed exactly as before issue 15
    words = fts_form("华腾科技股份有限公司收购星河数据").split()
    assert {"华腾", "科技", "收购", "星河"} <= set(words)
    assert join_spaced_han("财 务 指 标 2023 年") == "财务指标 2023 年"
    assert "财务" in fts_form("财 务 指 标").split()  # a vertical table header


def test_query_bigrams_drop_question_words():
    grams = han_bigrams("华腾科技的董事长是谁？")
    assert "华腾" in grams and "董事" in grams
    assert not any("谁" in g for g in grams)


def test_word_count_counts_han_characters():
    assert word_count("三、销量趋势") == 6
    assert word_count("Sales trend by year") == 4
    assert word_count("图1展示了2019年至2023年新能源汽车年销量，五年间销量增长约七倍。") > 20


def _triples(paragraphs: list[str]) -> set[tuple[str, str, str]]:
    units = [TextUnit("doc", i + 1, BOX, p) for i, p in enumerate(paragraphs)]
    return {(e.head_text, e.relation, e.tail_text) for e in extract(units).edges}


def test_chinese_relations_from_a_filing():
    found = _triples([
        "华腾科技股份有限公司（以下简称“公司”）于2023年3月15日召开董事会，审议通过了收购议案。",
        "公司董事长张伟表示，本次收购将加强公司在云计算领域的布局。公司总经理李娜负责实施。",
        "交易完成后，星河数据有限公司将成为华腾科技股份有限公司的全资子公司。",
        "星河数据有限公司成立于2015年，总部位于杭州市。",
        "公司的支付业务已接入微信支付。微信支付是腾讯旗下的移动支付平台。",
        "华腾科技与蓝海银行股份有限公司达成战略合作。",
    ])
    company = "华腾科技股份有限公司"
    assert ("张伟", "chair_of", company) in found  # 公司 is the filing's own alias
    assert ("李娜", "ceo_of", company) in found
    assert ("星河数据有限公司", "subsidiary_of", company) in found
    assert ("星河数据有限公司", "headquartered_in", "杭州市") in found
    assert ("微信支付", "subsidiary_of", "腾讯") in found
    assert (company, "partner_of", "蓝海银行股份有限公司") in found  # 华腾科技: its short form
    # 子公司 is no company, and 公司 inside it is not the alias
    assert not any("子公司" in h or "子公司" in t for h, _, t in found)


def test_chinese_values_are_entities():
    units = [TextUnit("doc", 1, BOX, "2023年3月，公司以3.2亿元收购星河数据，其毛利率为42.5%，"
                                     "净利润为1200万元。")]
    values = {(m.text, m.type) for m in extract(units).mentions}
    assert {("2023年3月", "DATE"), ("3.2亿元", "MONEY"), ("42.5%", "PERCENT"),
            ("1200万元", "MONEY")} <= values


def test_chinese_structure_intents_pin_numbers_and_pages():
    table3 = detect_structure("表3列出了哪些省份")
    assert table3 is not None and table3.kinds[0] == "table" and table3.number == "3"
    page5 = detect_structure("第5页的表格")
    assert page5 is not None and page5.page == 5 and "table" in page5.kinds
    formula = detect_structure("渗透率的计算公式")
    assert formula is not None and "formula" in formula.kinds


def test_ocr_joins_chinese_characters_tesseract_separates():
    from h3.resources.models.ocr import _CJK_GAP

    assert _CJK_GAP.sub("", "关于 做 好 2024 年 度 企业 研发 费用 ， 激励") == \
        "关于做好2024年度企业研发费用，激励"
    assert _CJK_GAP.sub("", "pump pressure 4 bar") == "pump pressure 4 bar"


def test_config_validates_the_new_keys():
    cfg = Settings.parse({"cold_storage": {"multilingual_embedding": "all",
                                               "ocr_languages": "chi_sim+eng"}})
    assert cfg.cold_storage.multilingual_embedding == "all"
    with pytest.raises(ConfigError, match="multilingual_embedding"):
        Settings.parse({"cold_storage": {"multilingual_embedding": "chinese"}})
    with pytest.raises(ConfigError, match="ocr_languages"):
        Settings.parse({"cold_storage": {"ocr_languages": "chinese; rm -rf"}})


def test_english_chunks_never_load_the_multilingual_model(monkeypatch):
    import h3.assets._multilingual as ml

    def refuse():
        raise AssertionError("the multilingual model was loaded for English text")

    monkeypatch.setattr(ml, "get_multilingual", refuse)
    texts = {"d": ["The pump pressure is 4 bar.", "2023 | 949.5 | 31.6%"]}
    vectors, seconds = ml.multilingual_vectors(texts, "non_english")
    assert vectors == {"d": {}} and seconds == 0.0


def test_multilingual_model_pairs_english_and_chinese_paraphrases():
    from h3.resources.models.multilingual import MultilingualEmbedder

    model = MultilingualEmbedder(num_threads=1)
    docs = model.passages(["华腾科技2023年营业收入达到12.5亿元。", "今天下午有雷阵雨。"])  # (2, 384)
    query = model.queries(["What was Huateng's revenue in 2023?"])[0]
    assert docs.shape == (2, 384)
    assert float(docs[0] @ query) > float(docs[1] @ query) + 0.05
