"""Documents first (issue 11): a query naming a company routes to its documents, a company not
in the corpus gets a note, and hits of one page merge into one (best score, every box)."""

import json

import numpy as np

from h3.ontology.document import Hit
from h3.resources.nlp.issuer import DocumentProfile
from h3.resources.recall.documents import (
    ABSENT_COMPANY_NOTE,
    named_forms,
    off_period_documents,
    route,
    unknown_company,
)
from h3.resources.recall.router import RecallContext, merge_pages
from h3.resources.store.lance import LanceDocumentStore

PROFILES = {
    "d1": DocumentProfile("Northwind Trading Holdings, Inc.", ("Northwind Trading", "NWTH"),
                          "NWTH", "10-K", 2023, "FY2023"),
    "d2": DocumentProfile("Northwind Trading Holdings, Inc.", ("Northwind Trading", "NWTH"),
                          "NWTH", "10-K", 2024, "FY2024"),
    "d3": DocumentProfile("Johnson & Johnson", ("J&J",), "", "8-K", 2024, "Q2 2024"),
}


def _context(tmp_path) -> RecallContext:
    store = LanceDocumentStore(tmp_path / "db")
    for doc_id, profile in PROFILES.items():
        store.upsert_document({"doc_id": doc_id, "source": f"/x/{doc_id}.pdf", "status": "ok",
                               "pages": 40, "metadata_json": json.dumps(
                                   {"profile": profile.to_json()})})
    return RecallContext(store=store, ok_doc_ids=set(PROFILES),
                         doc_sources={d: f"/x/{d}.pdf" for d in PROFILES},
                         embed=lambda texts: np.zeros((len(texts), 384), np.float32),
                         pages_total=120)


def test_a_named_company_routes_to_its_filings_the_named_period_first(tmp_path):
    ctx = _context(tmp_path)
    r = route(ctx, "What was Northwind Trading's gross margin in FY2024?")
    assert r.by == "company+period" and r.doc_ids == ["d2", "d1"] and r.note is None
    assert route(ctx, "Did J&J raise its guidance?").doc_ids == ["d3"]
    # no period named: the latest filing first (what holds now)
    assert route(ctx, "NWTH capital expenditure").doc_ids == ["d2", "d1"]


def test_a_company_outside_the_corpus_is_answered_from_all_documents_with_a_note(tmp_path):
    ctx = _context(tmp_path)
    r = route(ctx, "What is the operating margin of Contoso Pharmaceuticals?")
    assert r.doc_ids is None and "Contoso Pharmaceuticals" in r.note
    plain = route(ctx, "Which segment had the highest operating income?")
    assert plain.doc_ids is None and plain.note is None


def test_an_absent_company_beside_a_stored_one_gets_the_note(tmp_path):
    """Naming a stored company too does not hide the absent one (`h3 ask` refuses on it)."""
    ctx = _context(tmp_path)
    for q in ("Was Contoso's FY2024 gross margin higher than Northwind Trading's?",
              "What is the FY2024 revenue of Contoso (a client of Northwind Trading)?"):
        r = route(ctx, q)
        assert r.doc_ids == ["d2", "d1"] and r.note.startswith(ABSENT_COMPANY_NOTE), q
        assert "'Contoso'" in r.note
    # a name the question gives as the stored company's other name is that company
    renamed = route(ctx, "What was the FY2024 revenue of Contoso (formerly known as "
                         "Northwind Trading)?")
    assert renamed.doc_ids == ["d2", "d1"] and not renamed.note.startswith(ABSENT_COMPANY_NOTE)
    assert "'Contoso'" in renamed.note
    assert route(ctx, "What was Northwind Trading's FY2024 revenue?").note is None


def test_short_capital_forms_match_only_in_capitals():
    p = PROFILES["d1"]
    assert named_forms("nwth results", p) == []
    assert named_forms("NWTH results", p) == ["NWTH"]
    assert unknown_company("What is the FY2022 capex in USD millions?") is None
    assert unknown_company("How did Tesla's deliveries change?") == "Tesla"
    # an acronym the question spells out is a term, not a company
    assert unknown_company("What is the value of DPO given days payable outstanding of 40?") \
        is None
    assert unknown_company("What is the value of ZQX given days payable outstanding?") == "ZQX"


def test_generic_capitalised_words_are_not_an_absent_company(tmp_path):
    """A filing's parts, the filer's name for itself and line items written with capitals are
    no company: each of these made `h3 ask` refuse as "no document is from 'Company'"."""
    for q in ("What was the Company's revenue in 2022?", "What does Item 1A say about risk?",
              "What does Note 12 say about leases?", "What is shown in Table 3?",
              "What does Part II cover?", "What was Operating Income in 2022?",
              "What is the Group's net debt?"):
        assert unknown_company(q) is None, q
    # a name with a word of its own is still a company the corpus lacks
    assert unknown_company("What is the revenue of Capital One?") == "Capital One"
    assert unknown_company("What was Net Income of Contoso?") == "Contoso"
    ctx = _context(tmp_path)
    r = route(ctx, "What was Net Income of Northwind Trading in FY2024?")
    assert r.doc_ids == ["d2", "d1"] and r.note is None
    assert route(ctx, "What were Total Assets in FY2024?").note is None


def test_hits_of_one_page_merge_keeping_every_box():
    def hit(page, score, box):
        return Hit("d1", "/x/d1.pdf", page, box, "text", f"p{page}", score, "text")

    merged = merge_pages([hit(5, 0.9, (0, 0, 10, 10)), hit(5, 0.8, (0, 20, 10, 30)),
                          hit(6, 0.7, (0, 0, 10, 10)), hit(5, 0.6, (0, 0, 10, 10))])
    assert [(h.page, h.score) for h in merged] == [(5, 0.9), (6, 0.7)]
    assert merged[0].boxes == ((0, 0, 10, 10), (0, 20, 10, 30))
    assert merged[0].to_json()["boxes"] == [[0, 0, 10, 10], [0, 20, 10, 30]]


def test_mode_documents_lists_routed_documents_and_carries_the_note(tmp_path):
    from h3.resources.recall.router import recall

    ctx = _context(tmp_path)
    named = recall(ctx.store, ["Northwind Trading FY2023 revenue"], k=5, mode="documents",
                   ctx=ctx)[0]
    assert [h["doc_id"] for h in named["hits"]] == ["d1", "d2"]
    assert named["hits"][0]["text"].startswith("Northwind Trading Holdings, Inc. · 10-K")
    assert named["routing"]["by"] == "company+period" and "note" not in named
    other = recall(ctx.store, ["Revenue of Contoso Pharmaceuticals"], k=5, mode="documents",
                   ctx=ctx)[0]
    # no page of any document answers and no company is named: no document is made up
    assert other["hits"] == [] and "Contoso Pharmaceuticals" in other["note"]


def test_mode_documents_ranks_by_the_pages_that_answer_when_no_company_is_named(tmp_path):
    from h3.resources.recall.router import recall

    ctx = _context(tmp_path)
    texts = {"d1": "Dividends declared per share and share repurchases in the year.",
             "d2": "Warehouse leases and the depreciation of distribution centres.",
             "d3": "Quarterly dividends declared and paid per share: 0.52 each quarter."}
    ctx.store.add("chunks", [
        {"doc_id": d, "chunk_id": f"{d}:c{i}", "page": 1 + i, "bbox": [0, 0, 1, 1],
         "text": t, "section": "", "kind": "text", "token_count": 12, "region_ids": [],
         "vector": np.zeros(384, np.float32).tolist()}
        for d, t in texts.items() for i in range(2)])
    ctx.store.ensure_indexes("chunks")  # BM25, as ingestion builds it
    hits = recall(ctx.store, ["dividends declared per share"], k=5, mode="documents",
                  ctx=ctx)[0]["hits"]
    assert {h["doc_id"] for h in hits[:2]} == {"d1", "d3"}  # the leases filing, if at all, after


def test_a_named_quarter_picks_that_quarters_filing(tmp_path):
    ctx = _context(tmp_path)
    q2 = DocumentProfile("Johnson & Johnson", ("J&J",), "", "10-Q", 2024, "Q3 2024")
    ctx.store.upsert_document({"doc_id": "d4", "source": "/x/d4.pdf", "status": "ok",
                               "pages": 30, "metadata_json": json.dumps({"profile": q2.to_json()})})
    ctx.ok_doc_ids.add("d4")
    ctx.doc_sources["d4"] = "/x/d4.pdf"
    assert route(ctx, "J&J sales in the third quarter of 2024").doc_ids == ["d4", "d3"]
    assert route(ctx, "J&J Q2 2024 cash flow").doc_ids == ["d3", "d4"]


def test_inside_the_named_documents_the_company_name_is_left_out_of_the_words(tmp_path):
    from h3.resources.recall.documents import within_named_documents

    ctx = _context(tmp_path)
    q = "Has Northwind Trading reported legal battles?"
    assert within_named_documents(q, route(ctx, q)) == "Has reported legal battles?"
    slip = "Has north-wind trading reported legal battles?"  # folded and hyphenated
    assert within_named_documents(slip, route(ctx, slip)) == "Has reported legal battles?"
    assert within_named_documents("Is J&J's business cyclical?",
                                  route(ctx, "Is J&J's business cyclical?")) == \
        "Is business cyclical?"
    plain = "Which segment had the highest operating income?"
    assert within_named_documents(plain, route(ctx, plain)) == plain


def test_a_page_two_passages_support_outranks_a_page_with_one_of_the_same_score():
    from h3.resources.recall.text import PAGE_SUPPORT, page_support

    def row(i, page):
        return {"chunk_id": f"d1:c{i}", "doc_id": "d1", "page": page}

    ranked = page_support([(row(1, 7), 0.60), (row(2, 9), 0.59), (row(3, 9), 0.50)])
    assert [r["page"] for r, _ in ranked] == [9, 9, 7]
    assert abs(ranked[0][1] - (0.59 + PAGE_SUPPORT * 0.50)) < 1e-9


def test_routed_dense_search_in_memory_matches_the_stores(tmp_path):
    from h3.resources.recall.text import dense

    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(30, 384)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    ctx = _context(tmp_path)
    ctx.store.add("chunks", [
        {"doc_id": f"d{1 + i % 3}", "chunk_id": f"d{1 + i % 3}:c{i}", "page": 1 + i % 5,
         "bbox": [0, 0, 1, 1], "text": f"chunk {i}", "section": "", "kind": "text",
         "token_count": 2, "region_ids": [], "vector": v.tolist()} for i, v in enumerate(vectors)])
    ctx.embed = lambda texts: vectors[[0]]  # the query is chunk 0's vector
    where = "doc_id IN ('d1', 'd2')"
    in_store = [r["chunk_id"] for r in dense(ctx, "q", 8, where)]
    dense(ctx, "q", 8, where, ["d1", "d2"])  # first search: from the store
    in_memory = [r["chunk_id"] for r in dense(ctx, "q", 8, where, ["d1", "d2"])]
    assert ("_doc_chunks", "d1") in ctx.cache  # the second: in memory
    assert in_memory == in_store and in_memory[0] == "d1:c0"


def test_routing_is_a_prior_never_a_filter(tmp_path):
    """The named company's pages rank first; a page only another filing has still comes back
    (the old routing searched the named company's filings alone)."""
    from h3.resources.recall.text import text_recall

    ctx = _context(tmp_path)
    texts = {"d1": "Gross margin was 41 percent, up from 39 percent, on lower freight costs.",
             "d2": "Gross margin was 44 percent on pricing and lower freight costs.",
             "d3": "Gross margin was 67 percent; the robotics patent portfolio was licensed."}
    ctx.store.add("chunks", [
        {"doc_id": d, "chunk_id": f"{d}:c0", "page": 3, "bbox": [0, 0, 1, 1], "text": t,
         "section": "", "kind": "text", "token_count": 14, "region_ids": [],
         "vector": np.zeros(384, np.float32).tolist()} for d, t in texts.items()])
    ctx.store.ensure_indexes("chunks")
    margin = text_recall(ctx, "Northwind Trading gross margin in FY2024", 3)
    assert [h.doc_id for h in margin[:2]] == ["d2", "d1"]  # the named year's filing first
    patents = text_recall(ctx, "Northwind Trading robotics patent portfolio licensed", 3)
    assert "d3" in [h.doc_id for h in patents]
    assert route(ctx, "Northwind Trading robotics patents").doc_ids == ["d2", "d1"]


def test_a_profile_from_an_older_profiler_is_read_again_once_and_kept(tmp_path, monkeypatch):
    import pymupdf

    from h3.resources.recall import documents

    pdf = tmp_path / "cover.pdf"
    doc = pymupdf.open()
    doc.new_page().insert_text((72, 100), "FORM 10-K\nQuillfeather Widgets Corporation\n"
                               "(Exact name of registrant as specified in its charter)")
    doc.save(pdf)
    store = LanceDocumentStore(tmp_path / "db")
    old = {"issuer": "", "form_type": "", "version": 1}  # what an older profiler stored
    store.upsert_document({"doc_id": "d9", "source": str(pdf), "status": "ok", "pages": 1,
                           "metadata_json": json.dumps({"profile": old})})

    def context() -> RecallContext:
        return RecallContext(store=store, ok_doc_ids={"d9"}, doc_sources={"d9": str(pdf)},
                             embed=lambda t: np.zeros((len(t), 384), np.float32))

    assert documents.document_profiles(context())["d9"].issuer.startswith("Quillfeather")
    assert (tmp_path / documents.PROFILE_CACHE_FILE).is_file()
    documents._PROFILE_CACHE.clear()
    monkeypatch.setattr(documents, "profile_pdf", lambda path: 1 / 0)  # must not be needed
    assert documents.document_profiles(context())["d9"].form_type == "10-K"


def test_a_stored_company_is_never_called_absent_however_it_is_typed(tmp_path):
    ctx = _context(tmp_path)
    for query in ("What did Northwind report?", "northwind trading's margin",
                  "Revenue of Northwnd Trading in FY2023", "What is NWTH's debt?"):
        r = route(ctx, query)
        assert r.note is None and r.by.startswith("company"), query
    # imperatives and finance words that open a sentence are not names either
    assert route(ctx, "Give the FY2024 EBITDA. Using GAAP figures only.").note is None


def _with_chunks(ctx: RecallContext, texts: dict[str, str]) -> RecallContext:
    """The context's store with one chunk per document (doc_id -> text), full-text indexed."""
    ctx.store.add("chunks", [{"doc_id": d, "chunk_id": f"{d}:c0", "page": 3, "bbox": [1, 2, 3, 4],
                              "text": t, "section": "", "kind": "text", "token_count": 20,
                              "region_ids": [], "vector": [0.0] * 383 + [1.0]}
                             for d, t in texts.items()])
    ctx.store.ensure_indexes("chunks")
    return ctx


def test_a_name_the_corpus_mentions_is_not_called_absent(tmp_path):
    """An acronym, product or counterparty a stored document mentions is no absent company:
    "What does Table 1 show about HPO in OTSL?" was refused as "no document is from 'HPO'"."""
    ctx = _with_chunks(_context(tmp_path), {
        "d1": "Table 1 compares HPO methods: random search and Bayesian HPO on OTSL tasks.",
        "d2": "Northwind Trading completed the acquisition of Afterpay Limited in 2024."})
    r = route(ctx, "What does Table 1 show about HPO in OTSL?")
    assert r.mentioned == ["HPO"] and r.absent == []
    assert r.note is not None and not r.note.startswith(ABSENT_COMPANY_NOTE)
    beside = route(ctx, "What did Northwind Trading pay for Afterpay in FY2024?")
    assert beside.doc_ids == ["d2", "d1"] and beside.mentioned == ["Afterpay"]
    assert not beside.note.startswith(ABSENT_COMPANY_NOTE)
    # a company the corpus never mentions is still absent, with the reason; so is an acronym
    # the text holds only in lower case ("hpo" is no mention of "HPQ" nor "hpo" of "HPO")
    absent = route(ctx, "What is the operating margin of Contoso Pharmaceuticals?")
    assert absent.absent == ["Contoso Pharmaceuticals"] and absent.note.startswith(
        ABSENT_COMPANY_NOTE)
    assert route(ctx, "What was the revenue of HPQ in 2023?").note.startswith(
        ABSENT_COMPANY_NOTE)
    # the result says which is which, for `h3 ask`
    from h3.resources.recall.router import recall

    out = recall(ctx.store, ["What does Table 1 show about HPO in OTSL?"], k=3, ctx=ctx)[0]
    assert out["routing"]["mentioned"] == ["HPO"] and "absent" not in out["routing"]


def test_a_capital_inside_a_word_or_a_date_is_no_company():
    """"eBay's GMV" read as the absent company 'Bay' and "as of June 30, 2023" as 'June':
    `h3 ask` refused both (a name begins a word; a month or weekday is a date's word)."""
    for q in ("What was eBay's GMV in Q1 2023?", "What were iPhone's net sales in 2023?",
              "How much cash was there as of June 30, 2023?", "What was revenue for March 2023?",
              "What did the board approve on Monday, May 1?"):
        assert unknown_company(q) is None, q
    assert unknown_company("What was Contoso's cash as of June 30, 2023?") == "Contoso"
    # an apostrophe inside a name is part of it ("O'Malley's" read as 'O'), a possessive is not
    assert unknown_company("What was O'Malley's revenue in 2023?") == "O'Malley"
    assert unknown_company("What was the revenue of L'Oreal in 2022?") == "L'Oreal"
    assert unknown_company("What is McDonald's operating margin?") == "McDonald"
    assert unknown_company("What was the revenue of Contoso for June 2023?") == "Contoso"


def test_an_organisation_only_other_filings_mention_is_what_the_question_is_about(tmp_path):
    """"Who are the primary customers of Samsung Electronics?" over a corpus where only another
    company's filing mentions Samsung (as its customer) was answered with that filing's
    sentence: an organisation of the knowledge graph that a question naming no stored company
    is about is refused, with where the corpus mentions it; an acronym stays answerable."""
    from h3.ontology.entities import entity_id
    from h3.resources.answers.ask import refusal_reason
    from h3.resources.recall.router import recall

    ctx = _with_chunks(_context(tmp_path), {
        "d1": "Table 1 compares HPO methods: random search and Bayesian HPO on OTSL tasks.",
        "d2": "Northwind Trading sells display glass; Samsung Display is a major customer."})
    ctx.store.add("entities", [{"entity_id": entity_id("ORG", "Samsung Display"),
                                "name": "Samsung Display", "type": "ORG", "aliases": [],
                                "doc_ids": ["d2"], "mention_count": 1, "relation_count": 0}])
    asked = "Who are the primary customers of Samsung Display?"
    r = route(ctx, asked)
    assert r.about == ["Samsung Display"] and r.mentioned == []
    assert r.note.startswith(ABSENT_COMPANY_NOTE) and "d2.pdf" in r.note
    out = recall(ctx.store, [asked], k=3, ctx=ctx)[0]
    assert out["routing"]["about"] == ["Samsung Display"]
    assert any("Samsung Display" in h["text"] for h in out["hits"])  # the evidence mentions it
    assert refusal_reason(out) == r.note  # and is still no answer
    hpo = recall(ctx.store, ["What does Table 1 show about HPO in OTSL?"], k=3, ctx=ctx)[0]
    assert "about" not in hpo["routing"] and refusal_reason(hpo) is None
    # named beside a stored company, it is that company's counterparty: answered
    beside = route(ctx, "How much did Northwind Trading sell to Samsung Display in 2024?")
    assert beside.about == [] and beside.doc_ids[0] == "d2" and beside.note is None, beside


def test_a_filing_that_cannot_report_the_named_year_is_off_period(tmp_path):
    ctx = _context(tmp_path)
    old = DocumentProfile("Northwind Trading Holdings, Inc.", ("Northwind Trading",), "NWTH",
                          "10-K", 2019, "FY2019")
    ctx.store.upsert_document({"doc_id": "d0", "source": "/x/d0.pdf", "status": "ok",
                               "pages": 30, "metadata_json": json.dumps({"profile": old.to_json()})})
    ctx.ok_doc_ids.add("d0")
    docs = ["d0", "d1", "d2", "d3"]
    # an FY2019 question: the FY2023 / FY2024 filings (and the 2024 8-K) cannot report it
    assert off_period_documents(ctx, "Northwind Trading revenue in FY2019?", docs) == [
        "d1", "d2", "d3"]
    # an FY2022 one: the FY2023 and FY2024 10-Ks report it beside their own year; the FY2019
    # one cannot (its outlook reaches FY2020 at most)
    assert off_period_documents(ctx, "NWTH revenue FY2022", docs) == ["d0"]
    # an FY2020 forecast: the FY2019 10-K's outlook may give it
    assert "d0" not in off_period_documents(ctx, "NWTH production forecast for FY2020", docs)
    assert off_period_documents(ctx, "J&J sales in the second quarter of 2019", docs) == [
        "d1", "d2", "d3"]
    assert off_period_documents(ctx, "Northwind Trading revenue", docs) == []  # no year named
