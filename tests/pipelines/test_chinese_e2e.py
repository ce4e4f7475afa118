"""Chinese PDFs end to end through `h3 index-build`'s code path (issue 15): a company
announcement (text layer), the image-only scan of a government notice (OCR with chi_sim) and an
English brief, generated with PyMuPDF's CJK font (tests/fixtures/chinese_corpus.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import h3_home_env
from tests.fixtures.chinese_corpus import ANNOUNCEMENT, BRIEF_EN, NOTICE, _write, image_only_copy


@pytest.fixture(scope="module")
def chinese_store(tmp_path_factory: pytest.TempPathFactory) -> dict:
    from h3.pipelines.cli.index_build import ingest

    base = tmp_path_factory.mktemp("chinese")
    corpus = base / "corpus"
    corpus.mkdir()
    _write(ANNOUNCEMENT, corpus / "announcement.pdf")
    _write(BRIEF_EN, corpus / "brief_en.pdf")
    image_only_copy(_write(NOTICE, base / "notice.pdf"), corpus / "notice_scan.pdf")
    with h3_home_env(base / "h3") as home:
        report = ingest([str(corpus)])
    return {"home": home, "report": report}


def _recall(home: Path, queries: list[str], mode: str = "auto") -> list[dict]:
    from h3.resources.recall.router import recall
    from h3.resources.store import open_store

    with h3_home_env(home):
        return recall(open_store(), queries, k=5, mode=mode)


def _names(hits: list[dict]) -> list[tuple[str, int]]:
    return [(Path(h["source"]).name, h["page"]) for h in hits]


@pytest.mark.slow
def test_languages_vectors_and_ocr(chinese_store):
    from h3.resources.store import open_store

    assert chinese_store["report"]["ok"] == 3
    with h3_home_env(chinese_store["home"]):
        store = open_store()
        docs = {r["doc_id"]: r for r in store.rows("documents")}
        languages = {Path(r["source"]).name: r["language"] for r in docs.values()}
        assert languages == {"announcement.pdf": "zh", "notice_scan.pdf": "zh",
                             "brief_en.pdf": "en"}
        chunks = store.rows("chunks", None, ["chunk_id", "language", "fts_text", "doc_id"])
        ml_ids = {r["chunk_id"] for r in store.rows("chunks_ml", None, ["chunk_id"])}
        # shipped config (auto): the corpus holds Chinese, so every chunk gets an e5 vector,
        # the Chinese ones at ingestion, the English brief's from the multilingual_vectors run
        assert ml_ids == {c["chunk_id"] for c in chunks} != set()
        assert chinese_store["report"]["multilingual"]["status"] == "ok"
        assert all(" " in c["fts_text"] for c in chunks if c["language"] == "zh")
        scan = next(d for d in docs.values() if d["source"].endswith("notice_scan.pdf"))
        ocr = store.rows("regions", f"doc_id = '{scan['doc_id']}'", ["text", "origin", "bbox"])
    text = "".join(r["text"] for r in ocr)
    assert {r["origin"] for r in ocr} == {"tesseract"}
    assert "研发费用加计扣除" in text and "2024年5月31日" in text  # read as Chinese, joined
    assert all(0 <= r["bbox"][0] < r["bbox"][2] <= 596 for r in ocr)


@pytest.mark.slow
def test_chinese_questions_text_relation_and_cross_lingual(chinese_store):
    home = chinese_store["home"]
    chair, wechat, scanned, amount, cross = _recall(home, [
        "华腾科技的董事长是谁？", "腾讯和微信支付有什么关系", "企业年度申报的截止日期是哪天",
        "收购星河数据的交易金额", "How much did the acquisition of the data storage company cost?"])
    assert "张伟" in chair["hits"][0]["text"] and "relation" in chair["intent"]
    assert any("微信支付是腾讯旗下" in h["text"] for h in wechat["hits"])
    assert ("notice_scan.pdf", 2) in _names(scanned["hits"])  # found through OCR'd text
    assert _names(amount["hits"])[0] == ("announcement.pdf", 1)
    assert ("announcement.pdf", 1) in _names(cross["hits"])
    # the reverse: a Chinese question about the English brief (its chunks' e5 vectors)
    (subsidy,) = _recall(home, ["匈牙利为这个项目提供了多少补贴"])
    assert ("brief_en.pdf", 1) in _names(subsidy["hits"])

    # BM25 alone (segmented index) finds exact Chinese names and numbers
    from h3.resources.recall.router import make_context
    from h3.resources.recall.text import text_recall
    from h3.resources.store import open_store

    with h3_home_env(home):
        ctx = make_context(open_store())
        for query in ("3.2亿元", "蓝海银行", "0755-88102345"):
            hits = text_recall(ctx, query, 5, variant="fulltext")
            assert hits, query
            assert Path(hits[0].source).name in ("announcement.pdf", "notice_scan.pdf"), query


@pytest.mark.slow
def test_cross_lingual_questions_of_the_chinese_bench(tmp_path):
    """The bench's whole corpus (six documents, two of them English) and its cross-lingual
    questions: each direction >= 0.8 recall@5 (issue 15's target). A Chinese question over
    English chunks relies on the other-language slot, which a later re-sort by score (page
    support) once pushed out again: zh->en read 0.167."""
    from benchmarks.documents.chinese import evaluate, load_queries
    from h3.pipelines.cli.index_build import ingest
    from h3.resources.store import open_store
    from tests.fixtures.chinese_corpus import build

    build(tmp_path / "corpus")
    with h3_home_env(tmp_path / "h3"):
        assert ingest([str(tmp_path / "corpus")])["ok"] == 6
        cross = [q for q in load_queries() if q["intent"].startswith("cross")]
        per_intent = evaluate(open_store(), cross)["per_intent"]
    assert per_intent["cross_zh_en"]["recall@5"] >= 0.8, per_intent
    assert per_intent["cross_en_zh"]["recall@5"] >= 0.8, per_intent
