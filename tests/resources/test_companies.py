"""The issuer registry (resources/recall/companies.py): what people type for a company, from the
corpus's own profiles; never raises on odd names."""

import string

from hypothesis import given, settings
from hypothesis import strategies as st

from h3.resources.nlp.issuer import DocumentProfile, short_forms
from h3.resources.recall.companies import IssuerRegistry, fold, squash


def profile(issuer: str, ticker: str = "", former: tuple[str, ...] = ()) -> DocumentProfile:
    aliases = tuple(short_forms(issuer)) + ((ticker,) if ticker else ())
    p = DocumentProfile(issuer=issuer, aliases=aliases, ticker=ticker)
    if former and "former_names" in DocumentProfile.__dataclass_fields__:
        p = DocumentProfile(**{**p.__dict__, "former_names": former})
    return p


REGISTRY = IssuerRegistry({
    "a": profile("Quillfeather Mobil Corporation", "QMC"),
    "b": profile("Brightwater Works Company, Inc.", "BWW"),
    "c": profile("Tannery & Co.", "TNRY"),
    "d": profile("Société Générale Industrielle S.A."),
    "e": profile("O'Malley’s Restaurants Corporation"),
    "f": profile("Harbor-Line Stores, Inc.", "HLS"),
    "g": profile("Harborline Inc.", "HLS"),  # renamed: one company by its ticker
    "h": profile("Block Street Holdings, Inc."),
    "i": profile("General Widgets Corporation"),
    "j": profile("General Gadgets Corporation"),
})


def named(query: str) -> list[str]:
    return [m.company.key for m in REGISTRY.match(query)]


def test_exact_names_short_forms_and_tickers():
    assert named("What was Quillfeather Mobil's revenue?") == ["a"]
    assert named("QMC capital expenditure") == ["a"]
    assert named("qmc capital expenditure") == []  # a ticker matches in capitals only
    assert named("Did Tannery raise its dividend?") == ["c"]


def test_folding_accents_apostrophes_and_hyphens():
    assert named("revenue of Societe Generale Industrielle") == ["d"]
    assert named("How many restaurants does OMalley Restaurants run?") == ["e"]
    assert named("O’Malleys Restaurants store count") == ["e"]  # a slip: fuzzy
    assert named("Harborline store count") == named("Harbor-Line store count")


def test_a_renamed_company_is_one_company():
    company = REGISTRY.match("HLS net sales")[0].company
    assert sorted(company.doc_ids) == ["f", "g"]


def test_a_distinctive_leading_word_names_the_company_a_common_one_does_not():
    assert named("Quillfeather's refining margin") == ["a"]
    assert named("General's revenue") == []  # "General" begins two names and many others


def test_a_typing_slip_in_a_long_name_still_matches():
    assert named("Brightwatr Works revenue") == ["b"]


def test_a_single_common_word_in_lower_case_names_no_one():
    assert named("what is the block size of the cache?") == []
    assert named("Block Street's revenue") == ["h"]


NAME_SHAPES = ["JPMorgan Chase & Co.", "Morgan Stanley & Co. LLC", "Koninklijke Widgets N.V.",
               "Widgets plc", "Banco Widgets S.A.", "Widget Holdings, Inc.", "WIDGETS AG",
               "Ünïcode Wïdgets GmbH", "A", "&", "Inc.", "", "  ", "The", "& Co.", "S.A.",
               "3M Widgets", "ACME WIDGETS, INC.", "株式会社ウィジェット"]


def test_odd_legal_name_shapes_never_raise():
    registry = IssuerRegistry({str(i): profile(n) for i, n in enumerate(NAME_SHAPES)})
    for name in NAME_SHAPES:
        registry.match(f"What did {name} report?")
        fold(name), squash(name)


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=string.ascii_letters + " &.,'-’éü", max_size=40),
       st.text(max_size=60))
def test_any_name_and_any_query_never_raise(name, query):
    IssuerRegistry({"x": profile(name)}).match(query)


def test_a_name_that_dropped_a_word_is_the_same_company_a_common_first_word_is_not():
    registry = IssuerRegistry({"old": profile("Quillfeather Systems Incorporated"),
                               "new": profile("Quillfeather Inc.", "QFT"),
                               "g1": profile("General Widgets Corporation"),
                               "g2": profile("General Corporation")})
    company = registry.match("Quillfeather's FY2015 revenue")[0].company
    assert sorted(company.doc_ids) == ["new", "old"]
    assert [sorted(m.company.doc_ids) for m in registry.match("General Widgets revenue")] == [
        ["g1"]]
