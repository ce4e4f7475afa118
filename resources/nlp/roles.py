"""Officer and director relations from the way filings and press releases name people.

Reports state who holds which office in a few fixed layouts, not in news-style sentences:
- lists and tables of executive officers: "Jane Q. Doe  58  President and Chief Executive
  Officer" (name, optional age, title; cells separated by spaces, bars or line breaks);
- signature blocks: "/s/ Jane Q. Doe ... Jane Q. Doe, Senior Vice President and Chief Financial
  Officer" or "Jane Q. Doe – Director";
- appositions and quotes in prose: "Jane Q. Doe, Chairman and CEO, said ...", "said Chairman and
  CEO Jane Q. Doe", "CEO Jane Q. Doe said";
- appointments: "Jane Q. Doe was appointed President and Chief Executive Officer".
The office belongs to the document's issuer ("the Company", "we") unless the title is followed
by another organisation ("Chief Financial Officer of Other Corp.") or marks a past office
("..., 2012-2018", "former", "retired", "previously"): a director who is the CEO of another
company is not the issuer's CEO. Each edge keeps the text that states it, its page and box.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from ontology.entities import entity_id, normalise_name
from ontology.relations import Edge

_TITLE_WORD = (r"(?:President|Chief|Executive|Financial|Operating|Officer|Chairman|Chairwoman|"
               r"Chairperson|Chair|Vice|Senior|Board|Director|Directors|of|the|and|&|Co-|Interim|"
               r"Acting|Lead|Independent|Non-Executive|Principal|Accounting|Treasurer|Controller|"
               r"CEO|CFO|COO|Founder|Co-Founder|Member|member|Corporate|Secretary|Executive)")
_TITLE_SPAN = r"(?P<title>" + _TITLE_WORD + r"(?:[\s,&/]+(?:" + _TITLE_WORD + r"))*)"
_NAME_TOKEN = r"(?!" + _TITLE_WORD + r"\b)[A-Z][a-z][a-zA-Z'’-]*"  # never a title word
# a name never runs over a line break (lists put a heading or a word before it on its own line)
_NAME = (r"(?P<name>" + _NAME_TOKEN + r"\.?(?:[ \t]+[A-Z]\.){0,2}(?:[ \t]+" + _NAME_TOKEN
         + r"){1,2}(?:,?[ \t]+(?:Jr\.|Sr\.|II|III|IV))?)")
# name, then an optional age (lists, tables) and a separator, then the title
_LISTED = re.compile(r"(?<![\w.])" + _NAME + r"(?:[ \t]*[,–—:|-]?\s*(?:\(?\d{2}\)?\s*[,|]?\s*)?)"
                     r"(?:[,–—:|-]\s*)?(?:Title:\s*)?" + _TITLE_SPAN + r"\b")
_SAID_BEFORE = re.compile(r"\b(?:said|says|according\s+to)\s+(?:the\s+Company's\s+|our\s+|its\s+)?"
                          + _TITLE_SPAN + r"[ \t]+" + _NAME)
_SAID_AFTER = re.compile(r"(?<![\w,])" + _TITLE_SPAN + r"[ \t]+" + _NAME
                         + r"\s*,?\s+(?:said|says|stated|noted|added|commented)\b")
# a signature: "/s/ JANE Q. DOE" (often in capitals), then the title on the next line
_SIGNED = re.compile(r"/s/[ \t]*(?P<name>[A-Z][A-Za-z.'’-]*(?:[ \t]+[A-Z][A-Za-z.'’-]*){1,3})"
                     r"[ \t]*\n\s*(?:Title:\s*)?" + _TITLE_SPAN + r"\b")
_APPOINTED = re.compile(_NAME + r"(?:,\s*\d{2},)?\s+(?:was|has\s+been|had\s+been|will\s+be|is)\s+"
                        r"(?:appointed|"
                        r"named|elected|promoted\s+to)\s+(?:as\s+)?(?:the\s+)?(?:Company's\s+|our\s+"
                        r"|its\s+|new\s+)*" + _TITLE_SPAN)
# "the Board appointed Jane Q. Doe as Chief Financial Officer" (8-K Item 5.02)
_APPOINTS = re.compile(r"\b(?:appointed|named|elected|promoted|hired)\s+" + _NAME
                       + r"(?:,\s*\d{2},)?\s+(?:as|to\s+serve\s+as|to(?:\s+the\s+position\s+of)?)\s+"
                       r"(?:the\s+)?(?:Company's\s+|our\s+|its\s+|new\s+)*" + _TITLE_SPAN)
_NOT_NAME_WORDS = {"mr", "ms", "mrs", "dr", "the", "company", "board", "chief", "executive",
                   "officer", "president", "vice", "senior", "director", "directors", "annual",
                   "report", "form", "item", "part", "table", "contents", "united", "states",
                   "securities", "exchange", "commission", "principal", "financial", "name",
                   "age", "position", "title", "date", "signature", "signatures", "chairman",
                   "corporate", "group", "inc", "corporation", "power", "attorney", "our", "we",
                   "new", "york", "stock", "market", "global", "general", "counsel", "chair"}
_PAST = re.compile(r"^\s*[,(]?\s*(?:from\s+)?(?:19|20)\d{2}\s*(?:[-–—]|to)\s*(?:19|20)\d{2}|"
                   r"^\s*(?:from|until)\s+(?:[A-Z][a-z]+\s+)?(?:19|20)\d{2}")
_PAST_BEFORE = re.compile(r"\b(?:former|formerly|retired|previously|prior|past|ex-)\s*$",
                          re.IGNORECASE)
# an organisation named after a title, on the title's line (the next line starts another entry)
_OTHER_ORG = re.compile(r"^[ \t]*(?:,[ \t]*|[ \t]+)(?:of|at|for)?[ \t]*(?P<org>(?:The\s+)?[A-Z][\w&.'’-]*"
                        r"(?:[ \t]+(?:&[ \t]+)?[A-Z][\w&.'’-]*){0,5})")
# empty table cells ("| Jane Doe |  | 59 |  | Chief Executive Officer |": spacer columns of a
# filing's executive table) read as one separator
_EMPTY_CELLS = re.compile(r"\|(?:[ \t]*\|)+")
_ROLES = (("ceo_of", re.compile(r"\bchief\s+executive(?:\s+officer)?\b|\bCEO\b", re.IGNORECASE)),
          ("cfo_of", re.compile(r"\bchief\s+financial\s+officer\b|\bCFO\b", re.IGNORECASE)),
          ("chair_of", re.compile(r"(?<!vice\s)(?<!vice-)\bchair(?:man|woman|person)?\b",
                                  re.IGNORECASE)),
          ("director_of", re.compile(r"\bdirector\b", re.IGNORECASE)))


@dataclass(frozen=True, slots=True)
class RoleUnit:
    """One region's text with its page and box (lines kept: lists and tables need them)."""

    doc_id: str
    page: int
    bbox: tuple[float, float, float, float]
    text: str


def roles_in_title(title: str) -> list[str]:
    """The relations a title states: "President and Chief Executive Officer, Director" ->
    ceo_of, director_of. "Vice Chairman" is no chair; "Director of X" is a manager, not a
    board member."""
    found = []
    for relation, pattern in _ROLES:
        for m in pattern.finditer(title):
            if relation == "director_of" and re.match(r"\s+of\b", title[m.end():]):
                continue
            if relation == "chair_of" and re.search(r"vice[\s-]*$", title[:m.start()],
                                                    re.IGNORECASE):
                continue
            found.append(relation)
            break
    return found


def person_name(name: str) -> str:
    """'AMY E. HOOD' -> 'Amy E. Hood' (signatures are often in capitals); others as written."""
    words = " ".join(name.split()).split(" ")
    if all(not c.isalpha() or c.isupper() for c in "".join(words)):
        words = [w if len(w.rstrip(".")) <= 1 or w in ("II", "III", "IV") else w.capitalize()
                 for w in words]
    return " ".join(words)


def _plausible_name(name: str) -> bool:
    words = [w.strip(".,").lower() for w in name.split()]
    return not any(w in _NOT_NAME_WORDS for w in words) and len(words) >= 2


def _issuer_forms(issuer: str, aliases: Iterable[str]) -> set[str]:
    # "of the Company", "of the Corporation": how a filing names its issuer
    return {normalise_name(f, "ORG") for f in (issuer, *aliases) if f} | {"company",
                                                                           "corporation"}


def _belongs_elsewhere(after: str, forms: set[str]) -> bool:
    """Whether the text right after a title names another organisation or a past period."""
    if _PAST.match(after):
        return True
    m = _OTHER_ORG.match(after)
    if not m:
        return False
    # the issuer itself, exactly ("of Acme, Inc."); "Acme Web Services" is a unit, not Acme
    if normalise_name(m.group("org"), "ORG") in forms:
        return False
    # a following title word or a name is not an organisation
    return not re.match(r"(?:" + _TITLE_WORD + r")\b", m.group("org"))


def extract_roles(units: Iterable[RoleUnit], issuer: str, aliases: Iterable[str] = ()
                  ) -> list[Edge]:
    """ceo_of / cfo_of / chair_of / director_of / appointed_to edges from person to issuer
    (see the module docstring); none when the issuer is unknown."""
    if not issuer:
        return []
    forms = _issuer_forms(issuer, aliases)
    tail_id = entity_id("ORG", issuer)
    edges: dict[tuple, Edge] = {}

    def add(page: list[RoleUnit], starts: list[int], span: tuple[int, int], name: str,
            relation: str, evidence: str, rule: str, extra: dict | None = None) -> None:
        name = person_name(name)
        first = page[0]
        key = (first.page, relation, normalise_name(name, "PERSON"))
        if key in edges:
            return
        # the box: every region the statement runs over (a name and its title are often
        # separate text blocks: bold name, plain title)
        touched = [u for u, a, b in zip(page, starts, starts[1:] + [10**9], strict=True)
                   if a < span[1] and span[0] < b]
        boxes = [u.bbox for u in touched] or [first.bbox]
        bbox = (min(b[0] for b in boxes), min(b[1] for b in boxes), max(b[2] for b in boxes),
                max(b[3] for b in boxes))
        edges[key] = Edge(entity_id("PERSON", name), tail_id, relation, name, issuer,
                          first.doc_id, first.page, bbox, " ".join(evidence.split()),
                          rule=rule, extra=extra or {})

    by_page: dict[int, list[RoleUnit]] = {}
    for unit in units:
        by_page.setdefault(unit.page, []).append(unit)
    for page in by_page.values():
        # the page's regions in reading order, one text: lists and signature blocks put a name
        # and its title in separate blocks
        texts = [_EMPTY_CELLS.sub("|", u.text) for u in page]
        starts, pos = [], 0
        for t in texts:
            starts.append(pos)
            pos += len(t) + 1
        text = "\n".join(texts).replace("\xa0", " ")
        for pattern, rule in ((_LISTED, "roles:listed"), (_SIGNED, "roles:signed"),
                              (_SAID_BEFORE, "roles:said"), (_SAID_AFTER, "roles:said"),
                              (_APPOINTED, "roles:appointed"), (_APPOINTS, "roles:appointed")):
            for m in pattern.finditer(text):
                name, title = m.group("name"), m.group("title")
                # a title never ends in a connector: "Officer of the | Company" reads the rest
                title_end = m.start("title") + len(re.sub(r"(?:[\s,&/]+(?:of|the|and|&))+$",
                                                          "", title))
                if not _plausible_name(name):
                    continue
                before = text[max(0, m.start() - 24):m.start()]
                if _PAST_BEFORE.search(before) or _PAST_BEFORE.search(
                        text[m.start("title") - 12:m.start("title")]):
                    continue
                end = max(title_end, m.end("name"))  # "said CEO Jane Doe": after both
                if _belongs_elsewhere(text[end:end + 80], forms):
                    continue
                roles = roles_in_title(title)
                evidence = text[m.start():m.end()]
                span = (m.start(), m.end())
                if rule == "roles:appointed":
                    add(page, starts, span, name, "appointed_to", evidence, rule,
                        {"role": " ".join(title.split())})
                for relation in roles:
                    add(page, starts, span, name, relation, evidence, rule)
    return list(edges.values())
