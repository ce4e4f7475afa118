"""Grounded answers, piece by piece: the extractive quotes and the check of the model's text."""

from __future__ import annotations

from types import SimpleNamespace

import torch

from h3.resources.answers.extractive import extract, sentences, statement_rows, table_rows
from h3.resources.answers.grounding import check, figure_value, figures, names
from h3_runtime.decode import greedy_decode

CASH_FLOWS = """CONSOLIDATED STATEMENT OF CASH FLOWS
| (Millions) | 2023 | 2022 | 2021 |
|---|---|---|---|
| Net income | 5,363 | 4,869 | 5,058 |
| Purchases of property, plant and equipment | (1,577) | (1,373) | (1,420) |
| Dividends paid | (3,193) | (2,803) | (2,678) |"""
PROSE = ("Capital spending was higher in 2023. The company invested $1.6 billion in new plants. "
         "Revenue grew 3.5% to $32.8 billion, led by the Northwind segment.")


def hit(text: str, page: int, score: float = 0.8) -> dict:
    return {"doc_id": "d1", "source": "/in/acme-2023.pdf", "page": page, "bbox": [1, 2, 3, 4],
            "text": text, "score": score, "kind": "text", "via": "text"}


def test_a_table_row_is_read_with_its_column_headers():
    rows = table_rows(CASH_FLOWS)
    assert rows[1] == ("Purchases of property, plant and equipment: 2023 (1,577); 2022 (1,373); "
                       "2021 (1,420)")
    assert table_rows(PROSE) is None


# a statement as PDF text gives it: one cell a line, "$" apart from its figure
CASH_FLOWS_LINES = """Acme Corp and Subsidiaries
Consolidated Statement of Cash Flows
(Millions)
2023
2022
Net income
$
5,363
$
4,869
Purchases of property, plant and equipment
(1,577)
(1,373)
Capital spending rose in 2023 as planned.
12"""


def test_a_statement_laid_out_one_cell_a_line_is_read_as_rows():
    rows, used = statement_rows(CASH_FLOWS_LINES.splitlines())
    assert rows == ["Net income: 2023 $5,363; 2022 $4,869",
                    "Purchases of property, plant and equipment: 2023 (1,577); 2022 (1,373)"]
    assert used == set(range(5, 13))  # the prose line and the page number are no row
    quotes = extract("What was the FY2023 capital expenditure (in USD millions)?",
                     [hit(CASH_FLOWS_LINES, 60)])
    assert quotes[0]["text"] == rows[1] and quotes[0]["kind"] == "table_row"


def test_units_stay_with_their_figures_and_a_data_header_is_a_row():
    table = """BALANCE SHEETS
| Total assets | $ | 83,402 | 131,310 |
|---|---|---|---|
| Accounts payable | $ | 25,309 | 34,616 |
| Effective tax rate | 14.8 | % | 17.5 | % |"""
    assert table_rows(table) == ["Total assets: $83,402; 131,310",
                                 "Accounts payable: $25,309; 34,616",
                                 "Effective tax rate: 14.8%; 17.5%"]


def test_sentences_keep_figures_whole():
    assert sentences(PROSE) == ["Capital spending was higher in 2023.",
                                "The company invested $1.6 billion in new plants.",
                                "Revenue grew 3.5% to $32.8 billion, led by the Northwind segment."]


def test_a_metric_question_quotes_the_statement_row_that_reports_it():
    quotes = extract("What was the FY2023 capital expenditure (in USD millions)?",
                     [hit(PROSE, 61, 0.9), hit(CASH_FLOWS, 60)])
    assert quotes[0]["text"].startswith("Purchases of property, plant and equipment: 2023 (1,577)")
    assert quotes[0]["page"] == 60 and quotes[0]["kind"] == "table_row"
    assert quotes[0]["bbox"] == [1, 2, 3, 4] and quotes[0]["source"] == "/in/acme-2023.pdf"


def test_a_prose_question_quotes_the_sentence_that_answers_it():
    quotes = extract("How much did revenue grow?", [hit(CASH_FLOWS, 60), hit(PROSE, 61)])
    assert quotes[0]["text"] == "Revenue grew 3.5% to $32.8 billion, led by the Northwind segment."


def test_the_passage_is_quoted_before_the_table_of_contents_entry_naming_it():
    contents = hit("3.2 Special registers and built-in global variables . . . . . . . . . 10\n"
                   "3.2.2 Built-in global variables . . . . . . . . . . . . . . . . . . 11", 2)
    body = hit("Table 3-2 lists the nine built-in global variables: CLIENT_HOST, "
               "CLIENT_IPADDR and SERVER_MODE among them.", 11, score=0.6)
    quotes = extract("Which built-in global variables are listed?", [contents, body])
    assert quotes[0]["page"] == 11
    # with nothing better, the entry is still quoted: it says where to look
    assert extract("Which built-in global variables are listed?", [contents])[0]["page"] == 2
    # a statement's dot leader leads to figures: its row is no contents entry
    older = hit("Net sales . . . . . . . . . . . $ 32,765 $ 30,512\nThe company invested in plants.", 40)
    assert extract("What were net sales?", [contents, older])[0]["text"].startswith("Net sales")


def _cash_flows(figure: str, earlier: str) -> str:
    """A statement laid out one cell a line, its column years apart from the rows."""
    return ("CONSOLIDATED STATEMENTS OF CASH FLOWS\n(In thousands)\nNet income........ $\n"
            f"629,551\n$\n268,395\nNet cash provided by operating activities........ $\n"
            f"{figure}\n$\n{earlier}\nCash flows from investing activities:")


def test_a_filing_that_cannot_report_the_year_asked_about_is_quoted_last():
    # both filings' rows match the question's words alike and the later one is recalled
    # first, but an FY2019 question wants the FY2019 filing's figure ("d0")
    later = {**hit(_cash_flows("7,838", "7,230"), 57, 0.9), "doc_id": "d9"}
    own = {**hit(_cash_flows("1,469,502", "1,287,482"), 63, 0.5), "doc_id": "d0"}
    question = "What is the FY2019 operating cash flow (cash from operations) for Acme?"
    assert "7,838" in extract(question, [later, own])[0]["text"]  # recall says nothing: as before
    quotes = extract(question, [later, own], off_period=frozenset({"d9"}))
    assert "1,469,502" in quotes[0]["text"] and quotes[0]["page"] == 63
    assert all(q["page"] == 63 for q in quotes)
    # a row of the later filing that names the year (a five-year table) is not demoted
    table = {**hit("Net cash provided by operating activities: 2019 1,469,502; 2018 1,287,482",
                   58, 0.9), "doc_id": "d9"}
    assert extract(question, [table, own], off_period=frozenset({"d9"}))[0]["page"] == 58


def test_no_shared_word_no_quote():
    assert extract("Who painted the ceiling?", [hit(PROSE, 61)]) == []


def test_words_that_share_only_their_first_five_letters_are_not_one_word():
    """"Company" is not "Comparison": a question about neither's subject gets no quote (and
    `h3 ask --doc` refuses), while inflections of one word still match."""
    manual = hit("Table 2-2 Comparison of the different function usage IDs and authority.", 9)
    assert extract("What was the Company's revenue in 2023?", [manual]) == []
    audit = hit("The audit covered the companies of the group.", 3)
    assert extract("Which company did the auditor review?", [audit])[0]["page"] == 3
    ops = hit("Income from operations rose.", 4)
    assert extract("What was operating income?", [ops])[0]["page"] == 4


def test_figures_compare_by_value_as_written():
    assert figure_value("$1,577.00") == "1577" and figure_value("(2.50)%") == "2.5"
    assert figures("1. Revenue of $1,577.00\n2. A margin of 36.8%") == ["1577", "36.8"]
    assert names("The CEO is Jane Doe. Revenue rose.") == ["CEO", "Jane", "Doe"]


def test_the_check_passes_only_what_the_evidence_holds():
    assert check("Capital expenditure was $1,577 million in 2023.", [CASH_FLOWS],
                 "What was capital expenditure in 2023?").grounded
    wrong = check("Capital expenditure was $1.58 billion, says Jane Doe.", [CASH_FLOWS],
                  "What was capital expenditure in 2023?")
    assert not wrong.grounded
    assert wrong.unsupported_figures == ["1.58"] and wrong.unsupported_names == ["Jane", "Doe"]
    # a name the user asked about is not a claim of the model's
    assert check("Acme paid dividends of 3,193.", [CASH_FLOWS], "What did Acme pay?").grounded
    assert not check("", [CASH_FLOWS]).grounded


def test_a_name_opening_the_answer_is_checked_too():
    """The model's answer is one sentence: a company it opens with is a name like any other,
    while a common opener ("The", "Based") is not."""
    wrong = check("Globex paid dividends of 3,193.", [CASH_FLOWS], "What were dividends paid?")
    assert not wrong.grounded and wrong.unsupported_names == ["Globex"]
    assert check("Acme's dividends paid were 3,193.", [CASH_FLOWS], "What did Acme pay?").grounded
    assert check("Based on the statement, net income was 5,363.", [CASH_FLOWS]).grounded
    assert check("The answer is: No, net income was 5,363.", [CASH_FLOWS]).grounded


def test_ask_doc_refuses_a_company_the_document_is_not_from_and_never_mentions(tmp_path):
    """`h3 ask --doc`: a question about another company is not answered from this document's
    sentences; its own company, named or not, still is."""
    from h3.resources.answers.ask import ask
    from h3.resources.store.lance import LanceDocumentStore

    db = LanceDocumentStore(tmp_path / "db")
    db.upsert_document({"doc_id": "d1", "source": "/in/newco.pdf", "status": "ok", "pages": 1,
                        "metadata_json": "{}"})
    db.add("chunks", [{"doc_id": "d1", "chunk_id": "d1:c0", "page": 1, "bbox": [1, 2, 3, 4],
                       "text": "Newco Holdings Ltd reported revenue of 12 million in 2024.",
                       "section": "", "kind": "text", "token_count": 12, "region_ids": [],
                       "vector": [0.0] * 383 + [1.0]}])
    other = ask("What was Tesla's revenue in 2024?", db, doc_id="d1", navigate=False)
    assert other.refused and "'Tesla'" in other.reason and "newco.pdf" in other.reason
    for q in ("What was Newco's revenue in 2024?", "What was the Company's revenue in 2024?",
              "What was revenue in 2024?",
              "What was Oldco's (formerly known as Newco) revenue in 2024?"):
        answer = ask(q, db, doc_id="d1", navigate=False)
        assert not answer.refused and "12 million" in answer.text, q


class _Looping:
    """A 'model' whose logits always favour token (last + 1) % 3: greedy output loops 0 1 2 0 1 2."""

    def __call__(self, input_ids, cache=None, use_cache=True):
        logits = torch.zeros(1, 1, 5)
        logits[0, 0, (int(input_ids[0, -1]) + 1) % 3] = 1.0
        logits[0, 0, 3] = 0.5  # the runner-up a loop guard falls back on
        return type("Out", (), {"logits": logits})()


class _NoCache:
    def note_tokens(self, ids):
        pass


def test_decoding_cannot_repeat_an_ngram_when_asked_not_to():
    first = torch.tensor([1.0, 0.0, 0.0, 0.5, 0.0])
    plain = greedy_decode(_Looping(), _NoCache(), first, 9)
    assert plain == [0, 1, 2, 0, 1, 2, 0, 1, 2]
    guarded = greedy_decode(_Looping(), _NoCache(), first, 9, no_repeat_ngram=3)
    trigrams = [tuple(guarded[i:i + 3]) for i in range(len(guarded) - 2)]
    assert len(trigrams) == len(set(trigrams)) and guarded[:3] == [0, 1, 2]


def test_decoding_stops_when_its_stop_rule_says_so():
    first = torch.tensor([1.0, 0.0, 0.0, 0.5, 0.0])
    assert greedy_decode(_Looping(), _NoCache(), first, 9, stop=lambda out: out[-1] == 2) == [0, 1, 2]


def test_an_answer_ends_with_its_first_statement(default_model_dir):
    from transformers import AutoTokenizer

    from h3_runtime.reuse.runtime import ReuseRuntime, first_statement

    tokenizer = AutoTokenizer.from_pretrained(default_model_dir)
    holder = SimpleNamespace(tokenizer=tokenizer)

    def ended(text: str) -> bool:
        return ReuseRuntime._statement_ended(holder, tokenizer.encode(text))

    assert not ended("\n\nCapital expenditure was")  # a blank start is not an end
    assert not ended("Capital expenditure was $1,577.")  # no space after the mark yet
    assert not ended("The ratio was 1.05 in")  # a decimal point is not an end
    assert not ended("1. ") and not ended("Item 7. ")  # a list's or a heading's number
    assert ended("Capital expenditure was $1,577 million. In")
    assert ended("The ratio was 1.05.\n")
    assert ended("Net sales by segment\n\n")  # a paragraph without a mark
    # token by token, as greedy_decode asks: the answer ends right after its first sentence
    ids = tokenizer.encode("Capital expenditure was $1,577.0 million. In 2017 it was")
    first_end = next(i for i in range(1, len(ids) + 1)
                     if ReuseRuntime._statement_ended(holder, ids[:i]))
    assert tokenizer.decode(ids[:first_end]).startswith("Capital expenditure was $1,577.0 million.")
    assert "2017" not in tokenizer.decode(ids[:first_end])
    # what the answer shows: the statement, without the next word that revealed its end
    assert first_statement(tokenizer.decode(ids[:first_end])) == \
        "Capital expenditure was $1,577.0 million."
    assert first_statement("no end yet") == "no end yet"


def test_the_model_reads_the_quoted_hits_first_within_its_budget():
    from h3.resources.answers.ask import model_evidence

    words = SimpleNamespace(layout=SimpleNamespace(chunk_ids=lambda c: c.text.split()))
    hits = [{"doc_id": "a", "page": p, "bbox": [0, p], "text": "w " * n}
            for p, n in [(1, 5), (2, 3), (3, 4), (4, 2)]]
    quotes = [{"doc_id": "a", "page": 3, "bbox": [0, 3]}, {"doc_id": "a", "page": 1, "bbox": [0, 1]}]
    assert [h["page"] for h in model_evidence(hits, quotes, words, 100)] == [3, 1, 2, 4]
    assert [h["page"] for h in model_evidence(hits, quotes, words, 9)] == [3, 1]
    assert [h["page"] for h in model_evidence(hits, quotes, words, 7)] == [3, 2]  # 1 is too long
    assert [h["page"] for h in model_evidence(hits, [], words, 1)] == [1]  # never none


def test_whole_store_ask_refuses_only_names_its_evidence_never_mentions():
    """A name no document is from refuses `h3 ask` unless the recalled evidence mentions it (a
    segment, a product, a counterparty, an acronym a paper studies)."""
    from h3.resources.answers.ask import refusal_reason
    from h3.resources.recall.documents import ABSENT_COMPANY_NOTE

    about = hit("Table 1: HPO results on OTSL. Bayesian HPO reaches 0.91 accuracy.", 4, 0.9)
    other = hit("Revenue grew 3.5% to $32.8 billion.", 7, 0.9)
    note = f"{ABSENT_COMPANY_NOTE} 'HPO': answered from all documents"
    mentioned = {"hits": [about], "note": "no stored document is from 'HPO', but the corpus "
                 "mentions it", "routing": {"mentioned": ["HPO"]}}
    assert refusal_reason(mentioned) is None
    # called absent (the corpus search missed it) but the evidence mentions it: answered
    assert refusal_reason({"hits": [about], "note": note, "routing": {"absent": ["HPO"]}}) is None
    # evidence that never mentions the name: refused, with the reason
    assert refusal_reason({"hits": [other], "note": note,
                           "routing": {"absent": ["HPO"]}}) == note
    reason = refusal_reason({**mentioned, "hits": [other]})
    assert reason is not None and "'HPO'" in reason and "never mentions" in reason
    # a lower-case word is no mention of an acronym; a result without routing names refuses
    lower = hit("hpo and otsl in lower case", 4, 0.9)
    assert refusal_reason({"hits": [lower], "note": note, "routing": {"absent": ["HPO"]}}) == note
    assert refusal_reason({"hits": [about], "note": note}) == note


def test_the_quote_holds_the_figure_asked_for_not_the_headline_or_the_table_title():
    """Earnings releases: a headline repeating the question's words, a date, or the rows of a
    table whose title repeats them outranked the sentence with the figure asked for."""
    release = ("Acme Corp Reports Fourth-Quarter and Full-Year 2022 Financial Results\n"
               "Full-year revenue was $63.1 billion, down 20 percent year over year.")
    assert extract("What was Acme's full-year 2022 revenue?", [hit(release, 1)])[0]["text"] \
        .startswith("Full-year revenue was $63.1 billion")
    dated = ("Acme Announces Second Quarter Fiscal 2024 Results\n"
             "for its second quarter fiscal 2024 ended July 31, 2023.\n"
             "Second Quarter Revenue of $8.60 Billion, up 11% Y/Y")
    assert "$8.60 Billion" in extract("What was Acme's revenue in the second quarter of "
                                      "fiscal 2024?", [hit(dated, 1)])[0]["text"]
    # a table's title is every row's: its words do not make each row the answer
    page = ("Acme Corp Reports First Quarter Fiscal Year 2023 Operating Results\n"
            "Net sales for the first quarter increased 8.1 percent, to $53.44 billion.\n"
            "Comparable sales\nCanada\n2.4%\nOther International\n-3.1%")
    quotes = extract("What were Acme's net sales for the first quarter of fiscal 2023?",
                     [hit(page, 1)])
    assert "$53.44 billion" in quotes[0]["text"]


def test_a_summary_figure_with_its_scale_and_an_acronym_spelled_out_are_read():
    """"$3.7 billion" under its label is a row's figure, and "CEO" finds "Chief Executive
    Officer" (the row the question asks for, among rows its table title matches alike)."""
    rows, _ = statement_rows(["Business Unit Revenue", "Client Computing Group (CCG)",
                              "$5.8 billion", "down 38%", "Data Center and AI (DCAI)",
                              "$3.7 billion", "down 39%"])
    assert "Data Center and AI (DCAI): $3.7 billion" in rows
    award = ("Target Incentive Plan awards for 2023\n| Name | Target award |\n|---|---|\n"
             "| President, International | 120% |\n| President and Chief Executive Officer | 200% |")
    quotes = extract("What is the 2023 target award of the CEO?", [hit(award, 2)])
    assert quotes[0]["text"] == "President and Chief Executive Officer: Target award 200%"


def test_a_sentence_wrapped_over_pdf_lines_or_after_an_abbreviation_is_quoted_whole():
    """PDF text breaks prose at each line's end: a line break ended a sentence, and so did
    "Inc." ("On January 4, 2023, Acme, Inc." was a quote); cells and headings stay apart."""
    text = ("On January 4, 2023, Acme, Inc. (the “Company”) announced a restructuring plan "
            "intended to reduce operating\ncosts. The Plan includes a reduction of the Company’s "
            "current workforce\nby approximately 10 percent and select real estate exits.\n"
            "Business Highlights\nQ1 2023\ndown 38%")
    assert sentences(text) == [
        "On January 4, 2023, Acme, Inc. (the “Company”) announced a restructuring plan intended "
        "to reduce operating costs.",
        "The Plan includes a reduction of the Company’s current workforce by approximately 10 "
        "percent and select real estate exits.",
        "Business Highlights", "Q1 2023", "down 38%"]
    quotes = extract("By what percentage did the restructuring plan reduce the workforce?",
                     [hit(text, 2)])
    assert "10 percent" in quotes[0]["text"]


def test_a_figure_the_model_gives_a_scale_must_hold_at_that_scale():
    """A table "(in millions)" holds 1,302: "$1,302 billion" is no grounded statement (the
    model put the figure in the wrong unit), "$1,302 million" and "$1.302 billion" are."""
    table = ("Condensed Statements of Income (in millions)\n| | 2023 | 2022 |\n|---|---|---|\n"
             "| Net income | $ 1,302 | 1,372 |")
    wrong = check("Net income was $1,302 billion.", [table], "What was net income?")
    assert not wrong.grounded and wrong.unsupported_figures == ["1302"]
    for right in ("Net income was $1,302 million.", "Net income was $1.302 billion.",
                  "Net income was 1,302.", "Revenue was $3.7 billion, up 16%."):
        assert check(right, [table, "Revenue was $3.7 billion, up 16%."]).grounded, right
    assert not check("Revenue was $3.7 million.", ["Revenue was $3.7 billion."]).grounded


def test_an_answer_that_stops_at_its_colon_says_nothing():
    """"The answer is:" was shown as the model's grounded answer: it states nothing."""
    for empty in ("The answer is:", "The guidance provided by Acme for Q3 2023 is:  "):
        assert not check(empty, [CASH_FLOWS], "What was the guidance?").grounded, empty
    assert check("The answer is: 5,363.", [CASH_FLOWS]).grounded


def test_prose_that_layout_boxed_as_a_one_column_table_is_still_quoted():
    """A press release's paragraph detected as a one-column table gave no row and no sentence:
    none of its words could be quoted (51 of 674 table chunks of an unseen filing corpus)."""
    boxed = ("Exhibit 99.1\nACME ANNOUNCES NEW BOARD MEMBER\n"
             "| SPRINGFIELD, August 16, 2023 - Acme Corp today announced the |\n|---|\n"
             "| election to its Board of Directors of Jane Q. Public. Most recently, she was CEO |\n"
             "| of Initech. |")
    quotes = extract("Who did Acme's Board of Directors elect in August 2023?", [hit(boxed, 3)])
    assert quotes and "election to its Board of Directors of Jane Q. Public." in quotes[0]["text"]
    # a grid with figure rows is read as rows, as before
    assert extract("What was net income in 2023?", [hit(CASH_FLOWS, 1)])[0]["kind"] == "table_row"


def test_an_answer_in_a_pages_other_matched_chunk_is_quoted_with_its_own_box():
    """Recall merges a page's hits into its best one; the others ride along as `passages`.
    The cash-flow table was the page's second chunk: before, only the first chunk's prose
    could be quoted, and the model never read the table."""
    from h3.ontology.document import Hit
    from h3.resources.answers.ask import model_evidence
    from h3.resources.recall.router import merge_pages

    def page_hit(text, score, box):
        return Hit("d1", "/in/acme-2023.pdf", 7, box, "text", text, score, "text")

    merged = merge_pages([page_hit(PROSE, 0.9, (0, 0, 10, 10)),
                          page_hit(CASH_FLOWS, 0.8, (0, 20, 10, 30)),
                          page_hit(PROSE, 0.7, (0, 40, 10, 50))])  # the same text: once
    assert len(merged) == 1 and merged[0].passages == (((0.0, 20.0, 10.0, 30.0), CASH_FLOWS),)
    as_json = merged[0].to_json()
    assert as_json["text"] == PROSE and as_json["passages"][0]["text"] == CASH_FLOWS
    quotes = extract("How much were dividends paid in 2023?", [as_json])
    assert "3,193" in quotes[0]["text"] and quotes[0]["bbox"] == [0.0, 20.0, 10.0, 30.0]
    words = SimpleNamespace(layout=SimpleNamespace(chunk_ids=lambda c: c.text.split()))
    read = model_evidence([as_json], quotes, words, 1000)
    assert [h["text"] for h in read] == [CASH_FLOWS, PROSE]  # the quoted passage first
