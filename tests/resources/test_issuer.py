"""Document profiles from cover pages (issue 11): issuer, short forms, ticker, form, period.
The covers are written for these tests in the layouts SEC filings and press releases use."""

from h3.resources.nlp.issuer import DocumentProfile, profile_document, short_forms, tidy_name

TEN_Q = """UNITED STATES
SECURITIES AND EXCHANGE COMMISSION
Washington, D.C. 20549
FORM 10-Q
QUARTERLY REPORT PURSUANT TO SECTION 13 OR 15(d) OF THE SECURITIES EXCHANGE ACT OF 1934
For the quarterly period ended September 30, 2024
Commission File Number 001-12345
NORTHWIND TRADING HOLDINGS, INC.
(Exact name of registrant as specified in its charter)
Delaware
Title of each class
Trading Symbol(s)
Name of each exchange on which registered
Common Stock, $0.01 par value
NWTH
The Nasdaq Stock Market LLC
Indicate by check mark whether the registrant is a large accelerated filer
Smaller reporting company ☐
"""

RELEASE = """Exhibit 99.1
Bluefin Marine Corporation Reports Third Quarter 2024 Results
SEATTLE, Oct. 24, 2024 -- Bluefin Marine Corporation (NYSE: BFM) today reported revenue of
$1.2 billion for the third quarter of 2024, said Chief Executive Officer Dana R. Whitfield.
"""


def test_a_10q_cover_gives_issuer_ticker_form_and_quarter():
    p = profile_document([TEN_Q])
    assert p.issuer == "Northwind Trading Holdings, Inc."
    assert p.ticker == "NWTH" and "NWTH" in p.aliases
    assert "Northwind Trading" in p.aliases  # legal suffixes dropped
    assert (p.form_type, p.fiscal_year, p.fiscal_period) == ("10-Q", 2024, "Q3 2024")


def test_an_earnings_release_headline_names_the_company():
    p = profile_document([RELEASE])
    assert p.issuer == "Bluefin Marine Corporation"
    assert p.ticker == "BFM" and "Bluefin Marine" in p.aliases
    assert p.form_type == "earnings release"
    assert p.fiscal_period == "Q3 2024"


def test_short_forms_people_type():
    assert "J&J" in short_forms("Johnson & Johnson")
    assert "IBM" in short_forms("International Business Machines Corporation")
    assert short_forms("The Example Company")[0] == "Example"
    assert "Shopmart" in short_forms("Shopmart.com, Inc.")
    assert tidy_name("THE EXAMPLE COMPANY") == "The Example Company"
    assert tidy_name("4K MEDIA CORP.") == "4K Media Corp."


def test_a_cover_without_a_name_says_so_and_round_trips():
    p = profile_document(["Quarterly newsletter\nNothing about anyone here"])
    assert p.issuer == "" and p.notes
    assert DocumentProfile.from_json(p.to_json()) == p


def test_a_current_report_on_results_takes_the_company_quarter():
    cover = ("FORM 8-K\nCURRENT REPORT\nDate of Report (Date of earliest event reported): "
             "July 30, 2025\nCONTOSO SOFTWARE CORPORATION\n(Exact name of registrant as "
             "specified in its charter)\nItem 2.02 Results of Operations. On July 30, 2025 the "
             "Company announced results for the fourth quarter ended June 30, 2025.")
    p = profile_document([cover])
    assert (p.issuer, p.form_type, p.fiscal_period) == ("Contoso Software Corporation", "8-K",
                                                        "Q4 2025")


def test_the_company_in_prose_is_not_an_issuer():
    """"The company took delivery..." matches name + legal suffix but names no one: a news brief
    without a named issuer gets none (and no alias "The" that would route every question)."""
    prose = ("Harbor Line Shipping reports a record year\nThe company took delivery of six "
             "vessels. Our Company grew.")
    assert profile_document([prose]).issuer == ""
    assert profile_document(["Acme Corp. said. The company grew."]).issuer == "Acme Corp."


# ---- issue 35: profiles from any form ------------------------------------------------------

import string  # noqa: E402

import pytest  # noqa: E402
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from h3.resources.nlp.issuer import PROFILE_VERSION, legible  # noqa: E402

LEGAL_NAMES = [
    "Harrow Lane & Co.", "Pemberton Stanley & Co. LLC", "Gerrit Holt N.V.", "Ashdown plc",
    "Banco Ribeira S.A.", "Tallis Brook Holdings, Inc.", "Kessler Werke AG",
    "Société Générale d'Études S.A.", "NORTHWIND TRADING HOLDINGS, INC.", "Zephyr", "", "Inc.",
    "& Co.", "Co.", "S.A.", ",.;&", "&", " & ", "The", "The Company", "A & B", "& Smith",
    "Smith &", "Ørsted Vind A/S", "株式会社テスト", "3M", "X & Y & Z Corp.", "...", "-", "'",
    "Holdings, Inc.", "The & Co.", "ab&cd", "Mc", "McTAVISH HOLDINGS CORPORATION",
]


@pytest.mark.parametrize("name", LEGAL_NAMES)
def test_short_forms_and_tidy_name_take_any_legal_name_shape(name):
    forms = short_forms(name)
    assert isinstance(forms, list) and all(isinstance(f, str) and f for f in forms)
    assert isinstance(tidy_name(name), str)
    # a short form is never only a suffix or an article: it would name every company
    assert not {f.lower() for f in forms} & {"inc", "co", "the", "s.a", "llc", "&"}


def test_short_forms_of_ampersand_co_names():
    assert short_forms("Harrow Lane & Co.") == ["Harrow Lane"]
    assert short_forms("Pemberton Stanley & Co. LLC") == ["Pemberton Stanley"]
    assert "Banco Ribeira" in short_forms("Banco Ribeira S.A.")
    assert "Société Générale d'Études" in short_forms("Société Générale d'Études S.A.")
    assert short_forms("Inc.") == [] and short_forms("& Co.") == [] and short_forms("") == []
    assert tidy_name("McTAVISH HOLDINGS CORPORATION") == "McTavish Holdings Corporation"
    assert tidy_name("HARLOW-BRIGGS, INC .") == "Harlow-Briggs, Inc."


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=string.printable + "&.,’'ÉéßØ株式 ", max_size=60))
def test_short_forms_and_profiles_never_raise_on_random_text(text):
    short_forms(text)
    tidy_name(text)
    profile_document([text, text])


def test_the_profile_json_carries_its_version_and_reads_older_ones():
    p = profile_document([TEN_Q])
    data = p.to_json()
    assert data["version"] == PROFILE_VERSION == 2
    assert data["former_names"] == [] and data["dated"] == ""
    assert DocumentProfile.from_json(data) == p
    old = {k: v for k, v in data.items() if k not in ("version", "dated", "former_names")}
    assert DocumentProfile.from_json(old).issuer == p.issuer  # a profile stored before v2


DATELINE_RELEASE = """NEWS RELEASE
Quillfeather Reports Second Quarter Fiscal 2025 Results
8/21/2024
PORTLAND, Ore., Aug. 21, 2024 /PRNewswire/ -- Quillfeather (NYSE: QFR), the maker of writing
instruments, today reported results for its second quarter of fiscal 2025, ended July 31, 2024.
Revenue rose 4 percent. The company will file its Form 10-Q with the Commission next month.
About Quillfeather
Quillfeather, Inc. makes pens and inks in twelve countries.
"""


def test_an_earnings_release_dateline_names_the_issuer_and_its_fiscal_quarter():
    p = profile_document([DATELINE_RELEASE])
    # the name before "(NYSE: ...)", completed with the legal suffix the text writes
    assert p.issuer == "Quillfeather, Inc." and p.ticker == "QFR"
    # a release mentioning a Form 10-Q in prose is still a release
    assert p.form_type == "earnings release"
    assert (p.fiscal_year, p.fiscal_period) == (2025, "Q2 2025")  # the company's own fiscal year
    assert p.dated == "2024-08-21"


def test_a_release_headline_that_wraps_and_a_full_year_quarter():
    wrapped = ("PRESS RELEASE\nMarlow Tide Corporation Reports Third Quarter\nand Year-to-Date "
               "Operating Results for Fiscal 2024\nMarlow Tide Corporation today announced "
               "its results for the third quarter (twelve weeks).")
    p = profile_document([wrapped])
    assert (p.issuer, p.form_type, p.fiscal_period) == ("Marlow Tide Corporation",
                                                        "earnings release", "Q3 2024")
    fourth = ("Fenwick Labs Reports Fourth-Quarter and Full-Year 2023 Financial Results\n"
              "News Summary\nForecasting first-quarter 2024 revenue of $2 billion.\n"
              "DENVER, Colo., Feb. 1, 2024 -- Fenwick Labs Corporation today reported "
              "fourth-quarter and full-year 2023 financial results.")
    p = profile_document([fourth])
    assert p.issuer == "Fenwick Labs Corporation"
    assert p.fiscal_period == "Q4 2023"  # the headline's quarter, not the forecast's
    assert p.dated == "2024-02-01"


def test_a_camel_case_name_keeps_its_first_letter():
    p = profile_document(["zTrek Systems Inc. Reports First Quarter 2024 Results\n"
                          "AUSTIN, Texas, April 30, 2024 -- zTrek Systems Inc. (Nasdaq: ZTRK) "
                          "today reported results."])
    assert p.issuer == "zTrek Systems Inc." and "zTrek Systems" in p.aliases


EIGHT_K = """UNITED STATES
SECURITIES AND EXCHANGE COMMISSION
FORM 8-K
CURRENT REPORT
Pursuant to Section 13 or 15(d) of the Securities Exchange Act of 1934
Date of Report (Date of earliest event reported): March 3, 2025
BRAMBLEWOOD FOODS COMPANY
(Exact name of registrant as specified in its charter)
Not Applicable
(Former name or former address, if changed since last report)
Item 2.02 Results of Operations and Financial Condition.
On March 3, 2025 the Company issued a press release announcing results for the fourth quarter
and fiscal year ended January 31, 2025. A copy is furnished as Exhibit 99.1.
"""
EXHIBIT = """Exhibit 99.1
Bramblewood Foods Reports Fourth Quarter and Full Year Fiscal 2024 Results
OMAHA, Neb., March 3, 2025 -- Bramblewood Foods Company (NYSE: BWF) today reported results.
"""


def test_an_8k_with_a_press_release_attached_is_an_8k_dated_by_its_cover():
    p = profile_document([EIGHT_K, EXHIBIT])
    assert (p.issuer, p.form_type, p.dated) == ("Bramblewood Foods Company", "8-K", "2025-03-03")
    assert p.former_names == ()  # "Not Applicable"
    assert p.fiscal_period == "Q4 2024"  # the exhibit's headline: the company's fiscal 2024


def test_an_8k_date_set_above_its_label_and_a_table_of_registrants():
    cover = ("FORM 8-K\nCURRENT REPORT\nMay 9, 2025\nDate of Report (date of earliest event "
             "reported)\nCommission File Number\nExact Name of Registrant\nas specified in its "
             "charter\nState of Incorporation\n001-11111\nHALBERD ENERGY CORPORATION\nOhio\n"
             "001-22222\nHALBERD POWER COMPANY\nOhio\nItem 8.01 Other Events.")
    p = profile_document([cover])
    assert (p.issuer, p.form_type, p.dated) == ("Halberd Energy Corporation", "8-K",
                                                "2025-05-09")
    assert p.fiscal_period == ""  # an 8-K on other events covers no period


def test_former_names_of_the_issuer_only():
    cover = ("FORM 8-K\nDate of Report (Date of earliest event reported): June 2, 2025\n"
             "Corvid Pay, Inc.\n(Exact name of registrant as specified in its charter)\n"
             "Item 1.01 On June 2, 2025, Corvid Pay, Inc. (formerly known as Larkspur Payments, "
             "Inc.) (\"Corvid\") entered into an amendment with Pinnacle Trust Company, National "
             "Association (formerly, Eastgate Bank Company) as trustee. Its app Corvid Wallet "
             "(formerly Larkspur Wallet Holdings Inc.) grew.")
    p = profile_document([cover])
    assert p.former_names == ("Larkspur Payments, Inc.",)
    assert "Larkspur Payments" in p.aliases and "Corvid Pay" in p.aliases
    label = ("FORM 10-Q\nFor the quarterly period ended March 31, 2025\nOSPREY MINING CORP.\n"
             "(Exact name of registrant as specified in its charter)\nKESTREL MINING CORP.\n"
             "(Former name or former address, if changed since last report)")
    assert profile_document([label]).former_names == ("Kestrel Mining Corp.",)
    shouted = ("OSPREY MINING CORP.\n(formerly \"KESTREL RESOURCES, INC.\")\nANNUAL REPORT ON "
               "FORM 10-K\nFOR THE FISCAL YEAR ENDED DECEMBER 31, 2024")
    assert profile_document([shouted]).former_names == ("Kestrel Resources, Inc.",)


def ten_q(end: str, spans: str, extra: str = "") -> list[str]:
    cover = (f"FORM 10-Q\nQUARTERLY REPORT PURSUANT TO SECTION 13 OR 15(d)\nFor the quarterly "
             f"period ended {end}\nCommission File Number 001-33333\nLINDEN GROVE RETAIL INC.\n"
             f"(Exact name of registrant as specified in its charter)\n{extra}")
    statements = f"CONDENSED CONSOLIDATED STATEMENTS OF INCOME\n{spans}\n{end}\nNet sales 100"
    return [cover, "Table of Contents", statements]


@pytest.mark.parametrize(("end", "spans", "period"), [
    # a fiscal year ending in January: the quarter ended April is the FIRST of the NEXT year
    ("April 30, 2024", "Three Months Ended", "Q1 2025"),
    ("July 31, 2024", "Three Months Ended\nSix Months Ended", "Q2 2025"),
    ("October 31, 2024", "Three and Nine Months Ended", "Q3 2025"),
    # a fiscal year ending in late September
    ("June 29, 2024", "Three Months Ended\nNine Months Ended", "Q3 2024"),
    ("December 28, 2024", "Three Months Ended", "Q1 2025"),
    # weeks: 12/16 -> Q1, 24 -> Q2, 36 -> Q3
    ("February 16, 2025", "24 Weeks Ended", "Q2 2025"),
    ("November 24, 2024", "12 Weeks Ended", "Q1 2025"),
    # a calendar year
    ("June 30, 2024", "Three and Six Months Ended", "Q2 2024"),
])
def test_a_10q_fiscal_quarter_comes_from_its_statements(end, spans, period):
    p = profile_document(ten_q(end, spans))
    assert (p.form_type, p.fiscal_period) == ("10-Q", period)
    assert p.fiscal_year == int(period[-4:]) and p.period_end == end


def test_a_10q_quarter_from_the_year_before_or_the_fiscal_quarter_it_names():
    prior = ten_q("August 3, 2024", "", "Read with the Annual Report on Form 10-K for the fiscal "
                  "year ended February 3, 2024.")
    assert profile_document(prior).fiscal_period == "Q2 2025"
    named = ten_q("August 3, 2024", "", "This report covers the second quarter of fiscal 2024.")
    assert profile_document(named).fiscal_period == "Q2 2024"  # the filer's own naming wins
    bare = profile_document(ten_q("September 30, 2024", ""))
    assert bare.fiscal_period == "Q3 2024" and any("calendar" in n for n in bare.notes)


def test_a_cover_date_in_a_later_table_cell_and_a_52_week_year():
    cells = ("FORM 10-Q\nFor the quarterly period ended\nCommission file\nJune 30, 2024\n"
             "number 1-4444\nHarrow Lane & Co.\n(Exact name of registrant as specified in its "
             "charter)\nthree and six months ended June 30, 2024")
    p = profile_document([cells])
    assert (p.issuer, p.fiscal_period, p.period_end) == ("Harrow Lane & Co.", "Q2 2024",
                                                         "June 30, 2024")
    annual = ("FORM 10-K\nANNUAL REPORT PURSUANT TO SECTION 13 OR 15(d) FOR \nTHE FISCAL YEAR "
              "ENDED January 2, 2025\nGLENFIELD TOOLS INC.\n(Exact name of registrant as "
              "specified in its charter)")
    p = profile_document([annual])
    # a 52/53-week year ending in the first days of January is the year before's
    assert (p.form_type, p.fiscal_year, p.fiscal_period) == ("10-K", 2024, "FY2024")


def test_legible_tells_words_from_glyph_soup():
    assert legible("Acme Corporation today reported results for the quarter of 2024.")
    assert not legible('!"# $&\'()\'*+,(-\' !"#.#+,!\'" /0 .123.2"1 &3\',$4,0#5+!1\'-+,0#.,+!1')
    assert not legible("") and not legible("   \n ")


def _scan_pdf(path, text: str):
    """A PDF whose only page is an image of `text` (no text layer): what a scan looks like."""
    import pymupdf

    with pymupdf.open() as src:
        page = src.new_page()
        page.insert_textbox(pymupdf.Rect(50, 50, 560, 800), text, fontsize=13)
        pix = page.get_pixmap(dpi=200)
    with pymupdf.open() as doc:
        page = doc.new_page()
        page.insert_image(page.rect, pixmap=pix)
        doc.save(path)
    return path


def test_a_first_page_without_text_is_read_by_ocr(tmp_path):
    import shutil

    if not shutil.which("tesseract"):
        pytest.skip("tesseract is not installed")
    from h3.resources.nlp.issuer import profile_pdf

    path = _scan_pdf(tmp_path / "scan.pdf", "Exhibit 99.1\nGreywater Pumps Corporation Reports "
                     "Third Quarter 2024 Results\nTULSA, Okla., Oct. 29, 2024 -- Greywater Pumps "
                     "Corporation (NYSE: GWP) today reported results.")
    p = profile_pdf(str(path))
    assert (p.issuer, p.form_type, p.fiscal_period) == ("Greywater Pumps Corporation",
                                                        "earnings release", "Q3 2024")
