"""Officer and director relations from filing layouts (issue 11). Every text here is written
for the test in the layouts real filings use; none is copied from a filing."""

from h3.resources.nlp.roles import RoleUnit, extract_roles, roles_in_title

ISSUER = "Harbor Lights Corporation"


def _edges(*texts, issuer=ISSUER, aliases=("Harbor Lights",)):
    units = [RoleUnit("d1", 3, (10.0, 10.0 * i, 500.0, 10.0 * i + 8), t)
             for i, t in enumerate(texts, 1)]
    return {(e.relation, e.head_text) for e in extract_roles(units, issuer, aliases)}, units


def test_an_executive_officer_table_with_ages():
    found, _ = _edges("Name\nAge\nPosition",
                      "Maria T. Okafor\n61\nChair of the Board, President and Chief Executive "
                      "Officer",
                      "Gregory L. Hanssen\n54\nExecutive Vice President and Chief Financial "
                      "Officer",
                      "Paul Dimitriou\n49\nVice Chairman and General Counsel")
    assert ("ceo_of", "Maria T. Okafor") in found and ("chair_of", "Maria T. Okafor") in found
    assert ("cfo_of", "Gregory L. Hanssen") in found
    assert not any(name == "Paul Dimitriou" and rel == "chair_of" for rel, name in found)


def test_signature_blocks_in_capitals_and_in_two_columns():
    found, _ = _edges("/s/ GREGORY L. HANSSEN\nExecutive Vice President and Chief Financial "
                      "Officer\n(Principal Financial Officer)",
                      "/s/ Maria T. Okafor\n/s/ Irene Castellanos\nMaria T. Okafor – President "
                      "and Chief Executive Officer and\nDirector\nIrene Castellanos – Director")
    assert ("cfo_of", "Gregory L. Hanssen") in found
    assert ("ceo_of", "Maria T. Okafor") in found
    assert ("director_of", "Irene Castellanos") in found
    assert ("ceo_of", "Irene Castellanos") not in found


def test_quotes_and_appointments_in_prose():
    found, _ = _edges('"Demand held up well," said Chairman and CEO Maria T. Okafor.',
                      "CFO Gregory Hanssen said the margin outlook is unchanged.",
                      "Samuel K. Brandt was appointed President and Chief Executive Officer "
                      "effective March 1.")
    assert {("ceo_of", "Maria T. Okafor"), ("chair_of", "Maria T. Okafor"),
            ("cfo_of", "Gregory Hanssen"), ("ceo_of", "Samuel K. Brandt"),
            ("appointed_to", "Samuel K. Brandt")} <= found


def test_offices_at_other_companies_and_past_offices_are_not_the_issuers():
    found, _ = _edges("Board of Directors",
                      "Lena V. Marsh\n58\nChairman and Chief Executive Officer, Cobalt Freight "
                      "Inc.",
                      "Oscar D. Whitley, Chief Financial Officer of Redwood Analytics",
                      "Maria T. Okafor\nChief Executive Officer, 2016-2021",
                      "Harold J. Finch, former Chief Executive Officer")
    assert not {rel for rel, _ in found} & {"ceo_of", "cfo_of", "chair_of"}


def test_the_issuers_own_name_after_the_title_keeps_the_edge_with_its_evidence():
    units = [RoleUnit("d1", 7, (0.0, 0.0, 100.0, 10.0), "Maria T. Okafor"),
             RoleUnit("d1", 7, (0.0, 12.0, 300.0, 22.0),
                      "Director and Chief Executive Officer of Harbor Lights Corporation")]
    edges = [e for e in extract_roles(units, ISSUER) if e.relation == "ceo_of"]
    assert len(edges) == 1
    e = edges[0]
    assert (e.page, e.tail_text, e.bbox) == (7, ISSUER, (0.0, 0.0, 300.0, 22.0))
    assert "Maria T. Okafor" in e.sentence and e.rule.startswith("roles:")
    assert extract_roles(units, "") == []  # no issuer known: no guess


def test_titles_map_to_relations():
    assert roles_in_title("President, Chief Executive Officer, and Chairman of the Board") == [
        "ceo_of", "chair_of"]
    assert roles_in_title("Senior Vice President and Chief Financial Officer") == ["cfo_of"]
    assert roles_in_title("Vice Chair and President") == []
    assert roles_in_title("Director of Investor Relations") == []


def test_current_report_and_quarterly_signature_layouts():
    found, _ = _edges("On May 2, 2025, the Board of Directors appointed Priya N. Raman, 47, as "
                      "Chief Financial Officer of the Company, effective June 1, 2025.",
                      "By: /s/ Priya N. Raman\nName: Priya N. Raman\nTitle: Chief Financial "
                      "Officer")
    assert ("cfo_of", "Priya N. Raman") in found and ("appointed_to", "Priya N. Raman") in found


def test_an_executive_table_with_empty_spacer_columns():
    found, _ = _edges("| Name |  | Age |  | Present Position |  | Other Positions |\n"
                      "|---|---|---|---|---|---|---|\n"
                      "| Maria T. Okafor |  | 61 |  | Chief Executive Officer |  | Chief "
                      "Operating Officer, 2017-2018 |\n"
                      "| Gregory L. Hanssen |  | 54 |  | Senior Vice President and Chief "
                      "Financial Officer |  |  |")
    assert ("ceo_of", "Maria T. Okafor") in found and ("cfo_of", "Gregory L. Hanssen") in found


def test_the_issuer_named_after_the_title_ends_at_the_line():
    found, _ = _edges("Maria T. Okafor, Chief Executive Officer of Harbor Lights\n"
                      "Gregory L. Hanssen, Chief Financial Officer of Harbor Lights")
    assert ("ceo_of", "Maria T. Okafor") in found and ("cfo_of", "Gregory L. Hanssen") in found
