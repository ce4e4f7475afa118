"""`h3 recall`'s text output shows a table hit as a table (issue 37): rows on lines of their own,
columns padded to one width, instead of `| Six Months Ended | |---| | (MILLIONS) | ...` on one
line; --json keeps the stored text."""

from __future__ import annotations

import json

from h3.pipelines.cli.annotate import table_lines

STATEMENT = ("Condensed statement of income\n"
             "| Six Months Ended | | |\n|---|---|---|\n| (MILLIONS) | | |\n"
             "| | July 2, 2023 | June 26, 2022 |\n| Net revenue | $ 26,000 | $ 33,000 |\n"
             "| Cost of sales | (14,500) | 18,000 |\n| Gross margin | 11,500 | 15,000 |")


def test_table_rows_on_their_own_lines_with_aligned_columns():
    lines = table_lines(STATEMENT, "gross margin")
    assert lines == [
        "Condensed statement of income",
        "Six Months Ended",
        "----------------  ------------  -------------",
        "(MILLIONS)",
        "                  July 2, 2023  June 26, 2022",
        "Net revenue           $ 26,000       $ 33,000",
        "Cost of sales         (14,500)         18,000",
        "Gross margin            11,500         15,000"]


def test_a_long_table_shows_the_rows_that_match_and_says_what_it_left_out():
    rows = "\n".join(f"| Item {i} | {i * 10} |" for i in range(1, 21))
    text = f"| Item | Amount |\n|---|---|\n{rows}\n| Total inventories | 2100 |"
    lines = table_lines(text, "total inventories", rows=3)
    assert lines[:2] == ["Item               Amount", "-----------------  ------"]
    assert lines[-2:] == ["Total inventories    2100", "… 18 more rows"]
    assert len(lines) == 6
    # blank columns go; a cell longer than the limit is cut
    assert table_lines("| a | | " + "x" * 40 + " |\n|---|---|---|\n| 1 | | 2 |", "a",
                       cell=10) == ["a  xxxxxxxxx…", "-  ----------", "1           2"]
    assert table_lines("no table here | at all", "q") is None


def test_recall_text_output_renders_table_hits_and_json_keeps_the_text(monkeypatch, capsys):
    import h3.resources.recall as recall_pkg
    import h3.resources.store as store_pkg
    from h3.pipelines.cli.main import main

    hit = {"source": "/in/10-q.pdf", "page": 4, "bbox": [10, 20, 500, 300], "kind": "table",
           "text": STATEMENT, "score": 0.81, "doc_id": "a" * 16}

    class Store:
        def count_rows(self, table):
            return 1

    monkeypatch.setattr(store_pkg, "open_store", lambda: Store())
    monkeypatch.setattr(recall_pkg, "recall", lambda store, queries, k, mode: [
        {"query": q, "intent": ["structure"], "latency_ms": 1.0, "hits": [dict(hit)]}
        for q in queries])
    assert main(["recall", "gross margin"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[1] == "  1. 10-q.pdf p.4 [10, 20, 500, 300] table (0.810):"
    assert out[2:] == [f"       {line}" for line in table_lines(STATEMENT, "gross margin")]
    assert main(["recall", "gross margin", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["hits"][0]["text"] == STATEMENT


def test_a_table_stored_on_one_line_is_shown_as_rows():
    """Structure recall keeps a table's text with its line breaks turned to spaces."""
    from h3.pipelines.cli.annotate import table_lines

    flat = ("| Quarter | Revenue | New orders | |---|---|---| | Q1 2023 | 10.4 | 12.1 | "
            "| Q2 2023 | 11.9 | |")
    assert table_lines(flat, "quarterly revenue") == [
        "Quarter  Revenue  New orders", "-------  -------  ----------",
        "Q1 2023     10.4        12.1", "Q2 2023     11.9"]
