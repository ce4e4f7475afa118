"""Financial-statement pages as recall targets (issue 11): which statement a question asks for,
and which pages open with a statement's title (an index of all three is none)."""

import numpy as np

from resources.recall.router import RecallContext
from resources.recall.statements import BOOST_METRIC, BOOST_NAMED, asked_statements, boosts
from resources.store.lance import LanceColdStore


def test_questions_ask_for_statements_by_name_or_by_metric():
    assert asked_statements("Using the cash flow statement, what was capex?") == {
        "cash_flows": BOOST_NAMED}
    assert set(asked_statements("What is the FY2023 working capital of Acme?")) == {
        "balance_sheet"}
    assert asked_statements("How did gross margin change?") == {"income": BOOST_METRIC}
    assert asked_statements("Who are the primary customers?") == {}


def test_statement_pages_are_found_under_split_titles_and_indexes_are_not(tmp_path):
    store = LanceColdStore(tmp_path / "db")
    texts = {1: ["Index to Financial Statements Consolidated Statements of Operations 40 "
                 "Consolidated Balance Sheets 41 Consolidated Statements of Cash Flows 42"],
             41: ["| Cash | 1,200 | 1,100 |", "Acme Corp. Consolidated Balance Shee t "
                  "(in millions) December 31, 2024 2023 Assets"],
             42: ["Consolidated Statement of Cash Flow s Years ended December 31"]}
    rows = [{"doc_id": "d1", "chunk_id": f"d1:c{i}", "page": page, "bbox": [0, 0, 1, 1],
             "text": t, "section": "", "kind": "text", "token_count": 10, "region_ids": [],
             "vector": [0.0] * 384}
            for i, (page, t) in enumerate((p, t) for p, ts in texts.items() for t in ts)]
    store.add("chunks", rows)
    ctx = RecallContext(store=store, ok_doc_ids={"d1"}, doc_sources={"d1": "/x/d1.pdf"},
                        embed=lambda t: np.zeros((len(t), 384), np.float32))
    assert boosts(ctx, "What is Acme's total debt?", ["d1"]) == {("d1", 41): BOOST_METRIC}
    assert boosts(ctx, "per the cash flow statement, capex?", ["d1"]) == {
        ("d1", 42): BOOST_NAMED}
