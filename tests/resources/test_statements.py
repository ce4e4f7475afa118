"""Financial-statement pages as recall targets (issue 11): which statement a question asks for,
and which pages are a statement's: its line items with figures, fewer of them under its title
(an index of all three titles is none)."""

import numpy as np

from h3.resources.recall.router import RecallContext
from h3.resources.recall.statements import (
    BOOST_METRIC,
    BOOST_NAMED,
    asked_statements,
    boosts,
    classify_page,
)
from h3.resources.store.lance import LanceDocumentStore


def test_questions_ask_for_statements_by_name_or_by_metric():
    assert asked_statements("Using the cash flow statement, what was capex?") == {
        "cash_flows": BOOST_NAMED}
    assert set(asked_statements("What is the FY2023 working capital of Acme?")) == {
        "balance_sheet"}
    assert asked_statements("How did gross margin change?") == {"income": BOOST_METRIC}
    assert asked_statements("Who are the primary customers?") == {}
    assert asked_statements("How did the effective tax rate change?") == {"income": BOOST_METRIC}


def test_a_statement_page_is_known_by_its_line_items_with_figures_not_by_prose():
    # the title was lost (a running header); the rows still say what the page is
    income = ["Year Ended December 31, 2017 2016 Total net sales 177,866 135,987",
              "| Cost of sales | 111,934 | 88,265 |\n| Operating income | 4,106 | 4,186 |",
              "| Provision for income taxes | (769) | (1,425) |\n| Net income | $ | 3,033 |",
              "| Diluted earnings per share | $ | 6.15 | 4.90 |"]
    assert classify_page(income) == {"income": 6}
    # the auditor's opinion names every statement, in prose, with no figures
    opinion = ["We have audited the consolidated balance sheets as of December 31, 2017 and "
               "the related statements of operations, total assets, net income and cash flows "
               "from operating activities, investing activities and financing activities."]
    assert classify_page(opinion) == {}


def test_statement_pages_are_found_under_split_titles_and_indexes_are_not(tmp_path):
    store = LanceDocumentStore(tmp_path / "db")
    texts = {1: ["Index to Financial Statements Consolidated Statements of Operations 40 "
                 "Consolidated Balance Sheets 41 Consolidated Statements of Cash Flows 42"],
             41: ["| Total assets | 9,200 | 8,100 |\n| Total current liabilities | 1,700 |",
                  "Acme Corp. Consolidated Balance Shee t (in millions) December 31, 2024 2023"],
             42: ["Consolidated Statement of Cash Flow s Years ended December 31",
                  "| Net cash provided by operating activities | 381 | 465 |\n"
                  "| Net cash used in investing activities | (179) | (42) |"]}
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


def test_statement_pages_are_saved_for_the_next_process_per_version_of_the_document(
        tmp_path, monkeypatch):
    """A new process (a new context) reads a document's statement pages from $H3_HOME/cache
    instead of classifying every page again; a re-ingested document is classified anew."""
    from h3.resources.recall import statements

    monkeypatch.setenv("H3_HOME", str(tmp_path / "h3"))
    store = LanceDocumentStore(tmp_path / "db")
    balance = ["Consolidated Balance Sheets (in millions)",
               "| Total assets | 9,200 | 8,100 |\n| Total current liabilities | 1,700 | 1,500 |"]
    store.add("chunks", [{"doc_id": "d1", "chunk_id": f"d1:c{i}", "page": 7, "bbox": [0, 0, 1, 1],
                          "text": t, "section": "", "kind": "text", "token_count": 10,
                          "region_ids": [], "vector": [0.0] * 384} for i, t in enumerate(balance)])
    store.upsert_document({"doc_id": "d1", "source": "/x/d1.pdf", "status": "ok",
                           "content_hash": "h1", "updated_at": 1.0})

    def context() -> RecallContext:
        return RecallContext(store=store, ok_doc_ids={"d1"}, doc_sources={"d1": "/x/d1.pdf"},
                             embed=lambda t: np.zeros((len(t), 384), np.float32))

    first = statements.statement_pages(context(), "d1")
    assert first["balance_sheet"] == {7: 1.0}
    (saved,) = (tmp_path / "h3" / "cache" / "statement_pages").glob("*.json")
    classified = []
    real = statements.classify_document
    monkeypatch.setattr(statements, "classify_document",
                        lambda ctx, doc: classified.append(doc) or real(ctx, doc))
    assert statements.statement_pages(context(), "d1") == first and classified == []
    store.upsert_document({"doc_id": "d1", "source": "/x/d1.pdf", "status": "ok",
                           "content_hash": "h2", "updated_at": 2.0})  # ingested again
    assert statements.statement_pages(context(), "d1") == first and classified == ["d1"]
    assert saved.exists() and len(list(saved.parent.glob("*.json"))) == 1
