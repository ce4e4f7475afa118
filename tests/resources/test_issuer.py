"""Document profiles from cover pages (issue 11): issuer, short forms, ticker, form, period.
The covers are written for these tests in the layouts SEC filings and press releases use."""

from resources.nlp.issuer import DocumentProfile, profile_document, short_forms, tidy_name

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
