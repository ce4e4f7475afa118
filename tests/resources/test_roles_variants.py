"""Officer and director names and titles in the shapes real filings, releases and 8-Ks use
(issue 35, item 5): combined and qualified titles, all-caps lists, honorifics, unicode names,
name particles, tables split across lines, titles before names, and the negatives a rule must
not turn into the issuer's offices (former officers, officers of other companies, unit heads,
headings that look like names). Every person and company here is invented; no text is copied
from a filing.

Each case: the region texts of one page, the (relation, person) pairs that must be found and
the pairs that must not ("*" for anybody).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from h3.resources.nlp.roles import RoleUnit, extract_roles, parse_title, roles_in_title

ISSUER = "Harbor Lights Corporation"
ALIASES = ("Harbor Lights", "HLC")
ANY = "*"


@dataclass(frozen=True)
class Case:
    id: str
    texts: tuple[str, ...]
    present: frozenset = field(default_factory=frozenset)
    absent: frozenset = field(default_factory=frozenset)


def case(id: str, *texts: str, present=(), absent=()) -> Case:
    return Case(id, texts, frozenset(present), frozenset(absent))


CASES: list[Case] = [
    # --- combined and qualified titles ------------------------------------------------------
    case("co_ceo", "Name\nAge\nPosition", "Jane Q. Doe\n52\nCo-Chief Executive Officer",
         present={("ceo_of", "Jane Q. Doe")}),
    case("evp_finance_and_cfo",
         "Marcus Ellery\nExecutive Vice President, Finance and Chief Financial Officer",
         present={("cfo_of", "Marcus Ellery")}),
    case("chief_financial_and_administrative",
         "Priya Venkataraman, Chief Financial and Administrative Officer",
         present={("cfo_of", "Priya Venkataraman")}, absent={("ceo_of", ANY)}),
    case("group_chief_executive", "Tobias Wren\n57\nGroup Chief Executive",
         present={("ceo_of", "Tobias Wren")}),
    case("managing_director_and_ceo", "Fiona Galbraith – Managing Director and CEO",
         present={("ceo_of", "Fiona Galbraith")}, absent={("director_of", ANY)}),
    case("ceo_and_director", "Raymond Achebe, Chief Executive Officer and Director",
         present={("ceo_of", "Raymond Achebe"), ("director_of", "Raymond Achebe")}),
    case("ceo_then_president", "Lucia Ferreira\n48\nChief Executive Officer, President and "
         "Director", present={("ceo_of", "Lucia Ferreira"), ("director_of", "Lucia Ferreira")}),
    case("interim_ceo", "Carla Mendes, Interim Chief Executive Officer",
         present={("ceo_of", "Carla Mendes")}),
    case("acting_cfo_quote", '"Cash flow was ahead of plan," said Acting Chief Financial Officer '
         "Nikhil Rao.", present={("cfo_of", "Nikhil Rao")}),
    case("cfo_treasurer_label", "Name: Grace Liu\nTitle: Senior Vice President, Chief Financial "
         "Officer and Treasurer", present={("cfo_of", "Grace Liu")}),
    case("chairwoman", "Ms. Adaeze Okonkwo, Chairwoman of the Board",
         present={("chair_of", "Adaeze Okonkwo")}),
    case("non_executive_chair", "Yuki Tanaka, Non-Executive Chair of the Board",
         present={("chair_of", "Yuki Tanaka")}),
    case("lead_independent_director", "Farid Haddad – Lead Independent Director",
         present={("director_of", "Farid Haddad")}, absent={("chair_of", ANY)}),
    case("cfo_and_unit_president",
         "Kathleen Moreau\nExecutive Vice President, Chief Financial Officer\nand President, "
         "Shared Services", present={("cfo_of", "Kathleen Moreau")}),
    # --- layouts: all caps, tables split across lines, titles before names -------------------
    case("all_caps_list", "JANE Q. DOE   Chief Executive Officer\nROBERT L. KINSEY   Chief "
         "Financial Officer", present={("ceo_of", "Jane Q. Doe"),
                                       ("cfo_of", "Robert L. Kinsey")},
         absent={("ceo_of", "Robert L. Kinsey")}),
    case("split_table_one_region", "Name\nAge\nPosition\nLeonard K. Asante\n59\nChairman of the "
         "Board and Chief Executive Officer\nMeredith Vance\n47\nSenior Vice President and Chief "
         "Financial Officer", present={("ceo_of", "Leonard K. Asante"),
                                       ("chair_of", "Leonard K. Asante"),
                                       ("cfo_of", "Meredith Vance")},
         absent={("ceo_of", "Meredith Vance")}),
    case("split_table_cell_regions", "Leonard K. Asante", "59", "Chief Executive Officer",
         "Meredith Vance", "47", "Chief Financial Officer",
         present={("ceo_of", "Leonard K. Asante"), ("cfo_of", "Meredith Vance")},
         absent={("ceo_of", "Meredith Vance")}),
    case("wide_spaced_row", "Sven Olafsson          62          President, Chief Executive "
         "Officer and Director", present={("ceo_of", "Sven Olafsson"),
                                          ("director_of", "Sven Olafsson")}),
    case("title_first_colon", "President and Chief Executive Officer: Wilhelmina Stroud",
         present={("ceo_of", "Wilhelmina Stroud")}),
    case("title_first_table", "| Office | Officer |\n|---|---|\n| Chief Financial Officer | "
         "Arturo Beltrán |", present={("cfo_of", "Arturo Beltrán")}),
    case("two_column_signatures", "Amelia Ortiz\nDevon Clarke\nPresident and Chief Executive "
         "Officer\nExecutive Vice President and Chief Financial Officer",
         present={("ceo_of", "Amelia Ortiz"), ("cfo_of", "Devon Clarke")},
         absent={("ceo_of", "Devon Clarke"), ("cfo_of", "Amelia Ortiz")}),
    case("two_column_one_title", "Amelia Ortiz\nDevon Clarke\nPresident and Chief Executive "
         "Officer\nMarch 1, 2024", present={("ceo_of", "Amelia Ortiz")},
         absent={("ceo_of", "Devon Clarke")}),
    case("signature_caps_unicode", "/s/ JOSÉ ÁLVAREZ\nChief Executive Officer",
         present={("ceo_of", "José Álvarez")}),
    case("footnoted_name_issuer_next_line",
         "Timothy Okoro(2)(4)\nPresident & Chief Executive Officer\nHarbor Lights Corporation\n"
         "Portland, Oregon", present={("ceo_of", "Timothy Okoro")}),
    # --- names: honorifics, unicode, particles, suffixes --------------------------------------
    case("honorific_dr", "Dr. Helena Marsh, President and Chief Executive Officer",
         present={("ceo_of", "Helena Marsh")}),
    case("honorifics_mr_ms", "Mr. Owen Pryce – Chief Financial Officer\nMs. Lydia Ferro – "
         "Chair of the Board", present={("cfo_of", "Owen Pryce"), ("chair_of", "Lydia Ferro")}),
    case("unicode_name", "José Álvarez\n58\nChief Executive Officer",
         present={("ceo_of", "José Álvarez")}),
    case("unicode_apostrophe_hyphen", "Zoë O'Brien-Łukasz, Executive Vice President and Chief "
         "Financial Officer", present={("cfo_of", "Zoë O'Brien-Łukasz")}),
    case("particles_de_la", "Ana de la Cruz\nChair of the Board of Directors",
         present={("chair_of", "Ana de la Cruz")}),
    case("particle_van_table", "| Ludwig van Beethoven | 61 | Chief Executive Officer |",
         present={("ceo_of", "Ludwig van Beethoven")}),
    case("suffix_jr", "Robert T. Hale, Jr., Chairman of the Board",
         present={("chair_of", "Robert T. Hale, Jr.")}),
    case("hyphenated_given_name", '"We are on track," said Chairman & CEO Min-jun Park.',
         present={("ceo_of", "Min-jun Park"), ("chair_of", "Min-jun Park")}),
    case("leading_initial", "K. Deborah Whitlock\n61\nExecutive Vice President and Chief "
         "Financial Officer", present={("cfo_of", "K. Deborah Whitlock")}),
    # --- names only the NER reads (lower-case prefixes): spaCy finds the person --------------
    case("ner_name_in_quote", '"Demand was firm," said Omar al-Hassan, Chief Financial Officer '
         "of Harbor Lights.", present={("cfo_of", "Omar al-Hassan")}),
    case("ner_name_in_appointment", "The Board appointed Khalid el-Amin as Chief Executive "
         "Officer, effective May 1, 2024.", present={("ceo_of", "Khalid el-Amin"),
                                                     ("appointed_to", "Khalid el-Amin")}),
    case("ner_name_with_apostrophe_particle", "“Margins held up,” said Jean-Luc d'Ormesson, "
         "chief financial officer of Harbor Lights.",
         present={("cfo_of", "Jean-Luc d'Ormesson")}),
    # --- prose: releases, bios, 8-Ks ---------------------------------------------------------
    case("quote_name_issuer_title", '"We had a strong quarter," said Arjun Mehta, Harbor Lights '
         "CEO.", present={("ceo_of", "Arjun Mehta")}),
    case("quote_possessive_issuer", "said Julia Santos, Harbor Lights’ President and Chief "
         "Executive Officer.", present={("ceo_of", "Julia Santos")}),
    case("bio_is", "Nadia Petrova, 53, is President, Chief Executive Officer and a Director of "
         "the Company.", present={("ceo_of", "Nadia Petrova"),
                                  ("director_of", "Nadia Petrova")}),
    case("bio_has_served", "Kwame Mensah has served as our Chief Financial Officer since March "
         "2019.", present={("cfo_of", "Kwame Mensah")}),
    case("appointment_interim_cfo", "On June 3, 2024, the Board of Directors appointed Sophie "
         "Laurent, 49, as Interim Chief Financial Officer, effective July 1, 2024.",
         present={("cfo_of", "Sophie Laurent"), ("appointed_to", "Sophie Laurent")}),
    case("elected_chair", "Henrik Dahl was elected Chairman of the Board effective May 1.",
         present={("chair_of", "Henrik Dahl"), ("appointed_to", "Henrik Dahl")}),
    # --- negatives: former, other companies, unit heads, headings ------------------------------
    case("former_chair_ceo", "Beatrice Lowell\n66\nFormer Chairman and Chief Executive Officer",
         absent={("ceo_of", ANY), ("chair_of", ANY)}),
    case("retired_cfo_other_company", "Ingrid Solberg\nChief Financial Officer (Retired)\n"
         "Northgate Paper Corporation", absent={("cfo_of", ANY)}),
    case("other_company_next_line", "Dmitri Volkov\nPresident & Chief Executive Officer\n"
         "Bluewater Logistics, Inc.\nTacoma, Washington", absent={("ceo_of", ANY)}),
    case("other_company_of", "Samuel Osei, Chairman, President and Chief Executive Officer of "
         "Crestline Foods Inc.", absent={("ceo_of", ANY), ("chair_of", ANY)}),
    case("quote_other_company", '"The deal is good for both sides," said Lena Park, chief '
         "executive of Tidewater Mills.", absent={("ceo_of", ANY)}),
    case("unit_ceo", "Victor Huang\n54\nExecutive Vice President, President and Chief Executive "
         "Officer, Harbor Lights Marine", absent={("ceo_of", ANY)}),
    case("other_company_appoints", "Tidewater Mills named Oliver Grant as its new chief "
         "executive on Friday.", absent={("ceo_of", ANY), ("appointed_to", ANY)}),
    case("issuer_appoints", "Harbor Lights named Oliver Grant as its new chief executive on "
         "Friday.", present={("ceo_of", "Oliver Grant"), ("appointed_to", "Oliver Grant")}),
    case("past_years", "Marianne Duval\nChief Financial Officer, 2014–2019",
         absent={("cfo_of", ANY)}),
    case("ex_ceo", "Gerald Pike, ex-CEO of the Company, joined the advisory council.",
         absent={("ceo_of", ANY)}),
    case("vice_chair", "Paolo Ricci – Vice Chairman", absent={("chair_of", ANY)}),
    case("deputy_ceo", "Hannah Kerr, Deputy Chief Executive Officer", absent={("ceo_of", ANY)}),
    case("committee_chair", "Grace Whitfield, Chair of the Audit Committee",
         absent={("chair_of", ANY)}),
    case("coo_is_not_ceo", "Sarah Lindqvist, Chief Operating Officer",
         absent={("ceo_of", ANY), ("cfo_of", ANY)}),
    case("chief_accounting_is_not_cfo", "Evan Marsh, Vice President and Chief Accounting Officer",
         absent={("cfo_of", ANY)}),
    case("heading_caps", "EXECUTIVE OFFICERS OF THE REGISTRANT\nChief Executive Officer",
         absent={(r, ANY) for r in ("ceo_of", "cfo_of", "chair_of", "director_of")}),
    case("heading_board", "Board of Directors\nChairman of the Board",
         absent={(r, ANY) for r in ("ceo_of", "cfo_of", "chair_of", "director_of")}),
    case("agreement_signed_by_two_companies", "HARBOR LIGHTS CORPORATION\nBy: /s/ Irene "
         "Castellanos\nName: Irene Castellanos\nTitle: Chief Financial Officer",
         "QUILLFIELD SYSTEMS, INC.\nBy: /s/ Mark Olsen\nName: Mark Olsen\nTitle: Chief "
         "Financial Officer", present={("cfo_of", "Irene Castellanos")},
         absent={("cfo_of", "Mark Olsen")}),
    case("headline_issuer_name", "Harbor Lights Announces\nChief Financial Officer Transition",
         absent={(r, ANY) for r in ("ceo_of", "cfo_of", "chair_of", "director_of")}),
]


def found_pairs(extract, texts: tuple[str, ...], unit_type=RoleUnit) -> set[tuple[str, str]]:
    """(relation, person) pairs `extract` finds in one page of these region texts."""
    units = [unit_type("d1", 4, (10.0, 12.0 * i, 500.0, 12.0 * i + 10), t)
             for i, t in enumerate(texts, 1)]
    return {(e.relation, e.head_text) for e in extract(units, ISSUER, ALIASES)}


def failures(c: Case, found: set[tuple[str, str]]) -> list[str]:
    """What a case misses or wrongly finds (empty: it passes)."""
    out = [f"missing {p}" for p in sorted(c.present - found)]
    for relation, person in sorted(c.absent):
        wrong = [f for f in found if f[0] == relation and person in (ANY, f[1])
                 and f not in c.present]
        out += [f"wrong {w}" for w in sorted(wrong)]
    return out


def test_there_are_at_least_forty_variants():
    assert len(CASES) >= 40 and len({c.id for c in CASES}) == len(CASES)
    assert all(c.present or c.absent for c in CASES)


@pytest.mark.parametrize("c", CASES, ids=[c.id for c in CASES])
def test_variant(c: Case):
    found = found_pairs(extract_roles, c.texts)
    assert failures(c, found) == [], sorted(found)


@pytest.mark.parametrize("title, relations", [
    ("Chief Financial and Administrative Officer", ["cfo_of"]),
    ("Executive Vice President, Finance and Chief Financial Officer", ["cfo_of"]),
    ("Group Chief Executive", ["ceo_of"]),
    ("Managing Director and CEO", ["ceo_of"]),
    ("Interim Co-Chief Executive Officer", ["ceo_of"]),
    ("Chief Executive Officer, President and Director", ["ceo_of", "director_of"]),
    ("Former Chairman and Chief Executive Officer", []),
    ("Chairman Emeritus", []),
    ("CEO-elect", []),
    ("Deputy Chief Executive Officer", []),
    ("Chief Executive Officer of Crestline Foods Inc.", []),
    ("Chair of the Compensation Committee", ["director_of"]),
    ("Chief Operating Officer", []),
])
def test_the_title_model(title, relations):
    assert roles_in_title(title) == relations


def test_offices_keep_their_qualifiers_and_edges_say_them():
    offices = parse_title("Interim Co-Chief Executive Officer and Chief Financial Officer").offices
    assert [(o.role, sorted(o.qualifiers)) for o in offices] == [
        ("ceo", ["co", "interim"]), ("cfo", ["interim"])]
    units = [RoleUnit("d1", 2, (0.0, 0.0, 300.0, 10.0), "Jane Q. Doe\nCo-Chief Executive Officer")]
    (edge,) = extract_roles(units, ISSUER, ALIASES)
    assert (edge.relation, edge.extra) == ("ceo_of", {"qualifier": "co"})
