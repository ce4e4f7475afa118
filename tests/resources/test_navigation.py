"""H⁴ navigation: section trees (PDF outline, headings, page windows), extractive summaries,
choosing the section a question needs, and `h3 outline` / `h3 ask --doc` over an ingested store."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pymupdf
import pytest

from h3.ontology.sections import Section
from h3.resources.navigation import choose
from h3.resources.navigation.prompts import summary_prompt_chunks
from h3.resources.navigation.tree import PART_TOKENS, build_tree, read_outline

FILINGS = Path(__file__).resolve().parents[2].parent / "shared/corpora/financebench-dev/pdfs"


def _rows(texts: list[tuple[int, str]], tokens: int = 100, kind: str = "text") -> list[dict]:
    return [{"chunk_id": f"d1:c{i}", "page": page, "text": text, "kind": kind, "section": "",
             "token_count": tokens, "vector": None} for i, (page, text) in enumerate(texts)]


FILING = [
    (1, "Annual report on Form 10-K for the fiscal year."),
    (2, "Item 1. Business\nWe make industrial adhesives and sell them worldwide."),
    (3, "Our products are sold through distributors in 60 countries."),
    (4, "Item 1A. Risk Factors\nOur business is cyclical and depends on airline demand."),
    (5, "Supply chain disruptions may delay production."),
    (6, "Item 7. Management's Discussion and Analysis\nRevenue grew 5% to $1,200 million."),
    (7, "CONSOLIDATED STATEMENTS OF CASH FLOWS\nPurchases of property, plant and equipment "
        "(1,577) Net cash provided by operating activities 6,439"),
    (8, "Item 8. Financial Statements\nNote 1. Significant Accounting Policies\nWe follow GAAP."),
]


def test_headings_make_top_sections_with_pages_and_parts_within_budget():
    tree = build_tree("d1", _rows(FILING, tokens=400))
    top = [s for s in tree if s.level == 1]
    assert [s.title.split(".")[0] for s in top] == [
        "front matter", "Item 1", "Item 1A", "Item 7", "CONSOLIDATED STATEMENTS OF CASH FLOWS",
        "Item 8"]
    assert all(s.origin == "headings" for s in tree)
    item1 = top[1]
    assert (item1.page_start, item1.page_end) == (2, 3)
    parts = [s for s in tree if s.parent_id == item1.section_id]
    assert sum(len(p.chunk_ids) for p in parts) == len(item1.chunk_ids) == 2
    assert all(p.tokens <= PART_TOKENS for p in tree if p.level == 2)
    assert "[p6]" in top[3].summary and "$1,200 million" in top[3].summary


def test_a_long_section_is_cut_into_parts_at_page_breaks():
    body = [(2, "Item 7. Management's Discussion and Analysis")] + [
        (3 + i // 2, f"Paragraph {i} about results of operations.") for i in range(20)]
    rows = _rows([(1, "Item 1. Business"), *body, (20, "Item 8. Statements"), (21, "More")],
                 tokens=300)
    tree = build_tree("d1", rows)
    parts = [s for s in tree if s.level == 2 and s.parent_id == "s2"]
    assert len(parts) >= 5
    assert all(p.tokens <= PART_TOKENS for p in parts)
    # consecutive, complete, and (after the first) starting on a new page
    ids = [c for p in parts for c in p.chunk_ids]
    assert ids == [r["chunk_id"] for r in rows[1:22]]
    for a, b in zip(parts, parts[1:], strict=False):
        assert b.page_start > a.page_end or b.page_start == a.page_end  # never backwards


def test_no_headings_falls_back_to_page_windows():
    rows = _rows([(p, f"plain text of page {p}") for p in range(1, 30)])
    tree = build_tree("d1", rows)
    top = [s for s in tree if s.level == 1]
    assert {s.origin for s in tree} == {"pages"} and len(top) >= 3
    assert top[0].title.startswith("pages 1-")


def test_pdf_outline_gives_the_sections(tmp_path):
    doc = pymupdf.open()
    for n in range(6):
        doc.new_page().insert_text((72, 72), f"page {n + 1} text")
    doc.set_toc([[1, "Cover", 1], [1, "Part I", 2], [2, "Item 1. Business", 2],
                 [1, "Financial Statements", 4], [2, "Notes", 5], [3, "Note 1 (level 3)", 6]])
    path = tmp_path / "outlined.pdf"
    doc.save(path)
    toc = read_outline(path)
    assert toc[2] == [2, "Item 1. Business", 2]
    rows = _rows([(p, f"text of page {p}") for p in range(1, 7)], tokens=200)
    tree = build_tree("d1", rows, toc)
    top = [s for s in tree if s.level == 1]
    assert [s.title for s in top] == ["Cover", "Part I / Item 1. Business",
                                      "Financial Statements", "Notes"]
    assert [(s.page_start, s.page_end) for s in top] == [(1, 1), (2, 3), (4, 4), (5, 6)]
    assert {s.origin for s in tree} == {"outline"}
    assert read_outline(tmp_path / "missing.pdf") == []


@pytest.mark.skipif(not (FILINGS / "ADOBE_2022_10K.pdf").exists(), reason="no development set")
def test_a_real_filing_outline_reads():
    toc = read_outline(FILINGS / "ADOBE_2022_10K.pdf")
    assert len(toc) > 20 and any("Risk Factors" in e[1] for e in toc)


def test_bad_section_is_refused():
    with pytest.raises(ValueError, match="pages 5-3"):
        Section(doc_id="d", section_id="s1", level=1, title="x", page_start=5, page_end=3)


def test_navigation_picks_the_section_that_answers(tmp_path):
    from h3.resources.models.embedder import get_embedder

    embed = get_embedder().encode  # the real SBERT/MiniLM the store uses
    rows = _rows(FILING, tokens=200)
    vectors = embed([r["text"] for r in rows])
    for r, v in zip(rows, vectors, strict=True):
        r["vector"] = list(map(float, v))
    tree = build_tree("d1", rows)
    cases = {
        "What was the capital expenditure in the cash flow statement?": 7,
        "Is the business subject to cyclicality?": 4,
        "Where are the products sold?": 2,
    }
    for question, page in cases.items():
        branch = choose(question, tree, rows, embed([question])[0], sections=1)
        assert branch.parts[0].holds_page(page), (question, branch.to_json())
        assert all(r["chunk_id"] in branch.parts[0].chunk_ids for r in branch.chunks)
        assert branch.tokens < branch.doc_tokens
    budget = choose("cash flow", tree, rows, embed(["cash flow"])[0], sections=3, max_tokens=200)
    assert budget.tokens <= 200 and len(budget.chunks) == 1
    with pytest.raises(ValueError, match="sections must be >= 1"):
        choose("x", tree, rows, np.zeros(384), sections=0)


def test_summary_prompt_draws_on_every_section_within_the_limit():
    tree = build_tree("d1", _rows(FILING * 8, tokens=300))
    chunks = summary_prompt_chunks(tree, lambda c: len(c.text) // 3, 1000)
    top = [s for s in tree if s.level == 1]
    assert [c.chunk_id for c in chunks] == [s.section_id for s in top]
    assert sum(len(c.text) // 3 for c in chunks) <= 1000


def test_outline_and_ask_doc_over_an_ingested_store(ingested_sample, capsys):
    from h3.pipelines.cli.main import main
    from h3.pipelines.instance import h3_home_env

    with h3_home_env(ingested_sample["home"]):
        assert main(["outline", "annual_report.pdf", "--json"]) == 0
        out = json.loads(capsys.readouterr().out)
        assert out["tree"] == "stored"  # the `sections` stage ran in the ingestion
        top = [s for s in out["sections"] if s["level"] == 1]
        assert top and all(s["page_start"] >= 1 for s in out["sections"])
        assert main(["outline", out["doc_id"]]) == 0
        assert out["doc_id"] in capsys.readouterr().out
        assert main(["outline", "no-such.pdf"]) == 2
        assert "no-such.pdf: not in the store" in capsys.readouterr().err
        assert main(["ask", "--doc", "annual_report.pdf", "--no-model", "--json",
                     "What was the revenue?"]) == 0
        answer = json.loads(capsys.readouterr().out)
        nav = answer["stats"]["navigation"]
        assert nav["sections"] and nav["tree"] == "stored"
        pages = {p for s in nav["sections"] for p in range(s["page_start"], s["page_end"] + 1)}
        assert all(q["page"] in pages for q in answer["quotes"])
        # a question about the whole document: its outline, quoted (no word of it needed)
        assert main(["ask", "--doc", "annual_report.pdf", "--no-model", "--json",
                     "Give me an overview"]) == 0
        overview = json.loads(capsys.readouterr().out)
        assert not overview["refused"] and overview["quotes"]
        assert overview["answer"].startswith("annual_report.pdf: ")
        assert overview["stats"]["overview"]["quoted"] == len(overview["quotes"])


@pytest.mark.parametrize("question, whole", [
    ("Summarize this report", True), ("Give me an overview", True),
    ("What is this document about?", True), ("What are the key points?", True),
    ("What does the filing cover?", True), ("What was the revenue in 2023?", False),
    ("What does the company sell?", False), ("Which risk factors are listed?", False),
    ("Summarise the risk factors.", False), ("Give me a brief summary of the document", True)])
def test_a_question_about_the_whole_document_is_told_apart(question, whole):
    from h3.resources.answers.overview import asks_overview

    assert asks_overview(question) is whole


def test_the_overview_answer_is_the_outline_and_the_largest_sections_openings_quoted():
    from h3.resources.answers.overview import overview_answer
    from h3.resources.navigation.store import DocumentTree

    rows = _rows([(1, "Contents\nItem 1. Business . . . . . . . . . 2"), *FILING[1:]], tokens=400)
    for r in rows:
        r["bbox"] = [10.0, 20.0, 30.0, 40.0]
    tree = DocumentTree("d1", "/in/filing.pdf", build_tree("d1", rows), rows, stored=True)
    answer = overview_answer("Summarize this report", tree, k=3)
    top = [s for s in tree.sections if s.level == 1]
    assert answer.text.startswith(f"filing.pdf: {len(top)} section(s): ")
    assert all(f"{s.title} (p{s.pages})" in answer.text for s in top)
    assert len(answer.quotes) == 3 and not answer.refused
    by_text = {r["text"]: r for r in rows}
    for q in answer.quotes:  # each quote is its chunk's words, on its page, with its box
        chunk = next(t for t in by_text if q["text"] in " ".join(t.split()))
        assert q["page"] == by_text[chunk]["page"] and q["bbox"] == [10.0, 20.0, 30.0, 40.0]
    assert [q["page"] for q in answer.quotes] == sorted(q["page"] for q in answer.quotes)
    assert all(". . . . ." not in q["text"] for q in answer.quotes)  # no contents entry


def test_keys_navigation_branch_sections_tokens_and_share_size_the_branch(tmp_path, monkeypatch):
    from h3.resources.models.embedder import get_embedder
    from h3.resources.navigation import answer
    from h3.resources.navigation.store import DocumentTree

    embed = get_embedder().encode
    rows = _rows(FILING, tokens=200)
    for r, v in zip(rows, embed([r["text"] for r in rows]), strict=True):
        r["vector"] = list(map(float, v))
    tree = DocumentTree("d1", "filing.pdf", build_tree("d1", rows), rows, stored=True)
    # the store's read is the one double here: the keys go through the real config loader
    monkeypatch.setattr(answer, "document_tree", lambda db, doc: tree)

    def branch(**keys: float):
        config = tmp_path / f"h3_config_{len(keys)}_{sum(keys.values())}.yaml"
        lines = "".join(f"  {k}: {v}\n" for k, v in keys.items())
        config.write_text(f"navigation:\n{lines}" if keys else "{}\n")
        monkeypatch.setenv("H3_CONFIG", str(config))
        return answer.navigated_evidence(None, "d1", "What was the capital expenditure?",
                                         embed)[1]

    shipped, one = branch(), branch(branch_sections=1)
    assert len(one.parts) == 1 < len(shipped.parts) == 5
    assert one.parts[0] == shipped.parts[0]  # the same best part, fewer of the rest
    small = branch(branch_tokens=250)
    assert small.tokens <= 250 < shipped.tokens and small.parts == shipped.parts
    # navigation.branch_share: at most this share of the document's tokens (one part's at
    # least: the shipped 0.10 of this short filing is under one part's, the whole is not)
    capped, whole = branch(branch_sections=8), branch(branch_sections=8, branch_share=1.0)
    assert capped.tokens < whole.tokens <= whole.doc_tokens


def _axis(cos: float, axis: int) -> list[float]:
    """A unit vector at cosine `cos` to the question's (axis 0), off along its own `axis`."""
    v = np.zeros(384, np.float32)
    v[axis] = np.sqrt(1 - cos**2)
    v[0] = cos
    return list(map(float, v))


def _one_part_a_page(pages: dict[int, tuple[str, float]]) -> tuple[list[Section], list[dict]]:
    """A tree of one section and one single-chunk part per page (text, cosine to the question)."""
    rows, tree = [], []
    for i, (page, (text, cos)) in enumerate(pages.items()):
        rows.append({"chunk_id": f"d1:c{i}", "page": page, "text": text, "kind": "text",
                     "section": "", "token_count": 300, "vector": _axis(cos, i + 1)})
        tree += [Section(doc_id="d1", section_id=f"s{i + 1}", level=1, title=f"Part {i + 1}",
                         page_start=page, page_end=page, chunk_ids=(f"d1:c{i}",), tokens=300),
                 Section(doc_id="d1", section_id=f"s{i + 1}.1", level=2, title=f"Part {i + 1}",
                         page_start=page, page_end=page, parent_id=f"s{i + 1}",
                         chunk_ids=(f"d1:c{i}",), tokens=300, vector=tuple(rows[-1]["vector"]))]
    return tree, rows


def test_a_statement_question_goes_to_the_statement_not_to_a_table_repeating_a_few_lines():
    # page 30: the income statement (every line item); page 80: a segment table that repeats
    # four of its lines, nearer the question by cosine. Both are income pages, but the
    # statement is the fuller one (as text recall ranks them: statements.page_boosts)
    statement = ("Net sales 9,120 8,410 Cost of sales 5,230 4,980 Gross profit 3,890 3,430 "
                 "Research and development 610 590 Operating income 1,420 1,210 "
                 "Interest expense 120 110 Income before income taxes 1,300 1,100 "
                 "Provision for income taxes 270 240 Net income 1,030 860 "
                 "Diluted earnings per share 4.12 3.41")
    segment = ("Segment results: Net sales 9,120 8,410 Cost of sales 5,230 4,980 "
               "Operating income 1,420 1,210 Net income 1,030 860")
    tree, rows = _one_part_a_page({12: ("Our products are sold in 40 countries.", 0.30),
                                   30: (statement, 0.40), 80: (segment, 0.42)})
    question = "What does the P&L report?"
    branch = choose(question, tree, rows, np.asarray(_axis(1.0, 0), np.float32), sections=1)
    assert branch.parts[0].holds_page(30), branch.to_json()


def test_the_branch_loads_at_most_its_share_of_the_document_and_one_part_at_least():
    pages = {p: (f"Passage {p} on revenue.", 0.5 - p / 100) for p in range(1, 21)}
    tree, rows = _one_part_a_page(pages)  # 20 parts of 300 tokens: 6,000 tokens
    q = np.asarray(_axis(1.0, 0), np.float32)
    five = choose("revenue", tree, rows, q, sections=5)
    assert five.tokens == 1500
    shared = choose("revenue", tree, rows, q, sections=5, max_share=0.1)
    # a tenth of 6,000 tokens is under one part's (PART_TOKENS): one part's worth is kept,
    # the best chunks first
    assert shared.tokens <= PART_TOKENS < five.tokens and shared.parts == five.parts
    assert {r["page"] for r in shared.chunks} == {1, 2, 3, 4}
    both = choose("revenue", tree, rows, q, sections=5, max_tokens=600, max_share=0.1)
    assert both.tokens == 600
    with pytest.raises(ValueError, match="max_share"):
        choose("revenue", tree, rows, q, max_share=0)


def test_a_branch_longer_than_the_models_context_drops_its_weakest_parts_passages_first():
    """The branch's token bound counts the ingestion tokenizer's tokens; the model's may count
    more (tables of figures): the prompt is cut to the model's context, the lowest-ranked
    part's last passages first, never the best part's."""
    from types import SimpleNamespace

    from h3.resources.navigation.prompts import fit_context
    from h3_runtime.reuse.prompt import ChunkText

    runtime = SimpleNamespace(layout=SimpleNamespace(chunk_ids=lambda c: c.text.split(),
                                                     head_ids=[0, 0]),
                              max_document_tokens=lambda: 2 + 30)
    pieces = [("d#a", ChunkText("d:c1", 1, "w " * 10)), ("d#b", ChunkText("d:c2", 2, "w " * 10)),
              ("d#a", ChunkText("d:c3", 3, "w " * 10)), ("d#b", ChunkText("d:c4", 4, "w " * 10))]
    part_of = {"d:c1": 0, "d:c3": 0, "d:c2": 1, "d:c4": 1}  # part a ranked first
    kept, dropped = fit_context(pieces, part_of, runtime)
    assert [t.chunk_id for _, t in kept] == ["d:c1", "d:c2", "d:c3"] and dropped == 1
    runtime.max_document_tokens = lambda: 2 + 20
    kept, dropped = fit_context(pieces, part_of, runtime)
    assert [t.chunk_id for _, t in kept] == ["d:c1", "d:c3"] and dropped == 2
    runtime.max_document_tokens = lambda: 5  # never nothing: the best part's first passage
    kept, _ = fit_context(pieces, part_of, runtime)
    assert [t.chunk_id for _, t in kept] == ["d:c1"]
    runtime.max_document_tokens = lambda: 1000
    assert fit_context(pieces, part_of, runtime) == (pieces, 0)
