"""Officer and director relations from the way filings and press releases name people.

Reports state who holds which office in a few fixed layouts, not in news-style sentences:
- lists and tables of executive officers: "Jane Q. Doe  58  President and Chief Executive
  Officer" (name, optional age, title; cells separated by spaces, bars or line breaks, one
  region per cell or one for the whole table), all in capitals or not, with or without an
  honorific ("Dr.", "Ms."), the title sometimes first ("Chief Financial Officer: Jane Doe");
- signature blocks: "/s/ JANE Q. DOE" over "Senior Vice President and Chief Financial Officer",
  and two-column blocks that put two names on two lines and then their two titles;
- appositions, quotes and biographies in prose: "Jane Q. Doe, Acme's Chairman and CEO, said",
  "said Chairman and CEO Jane Q. Doe", "Jane Q. Doe, 58, is President ... of the Company";
- appointments: "Jane Q. Doe was appointed President and Chief Executive Officer".

A title is parsed into offices by the title model (`parse_title`, resources/nlp/titles.py), not
matched against a fixed list: "Chief Financial and Administrative Officer" holds a CFO,
"Executive Vice President, Finance and Chief Financial Officer" a vice-presidency and a CFO,
"Group Chief Executive" a CEO, "Managing Director and CEO" a CEO and no board seat. Each office
keeps its qualifiers: co-, interim and acting offices are held now; former, retired, emeritus,
"-elect" and deputy/vice offices are not the office itself. The office belongs to the document's
issuer unless the title names another organisation ("Chief Financial Officer of Other Corp.", or
the company on the next line of a directors list) or a past period ("..., 2012-2018"): a
director who is the CEO of another company is not the issuer's CEO, and "President and CEO,
<business unit>" runs a unit, not the issuer.

Names are read by a Unicode-aware pattern (in titles.py: accents, apostrophes, hyphens,
particles such as "de la" or "van", initials, "Jr.", capitals, honorifics and footnote marks
dropped). The project's
spaCy NER (resources/nlp/pipeline.py) does what the pattern cannot: it finds the people in prose
whose names the pattern cannot read ("Omar al-Hassan", "Yusuf ibn Rashid") and puts them through
the same layouts, tells whether the line under a title names a company, and drops a pattern
"name" it reads as a place in a line of prose. It does not veto names as organisations: the small
model labels many officers' names ORG in lists and signature lines. spaCy runs only on those few
lines, in one batch per document, and the layouts only around office words (a page without one
costs one search of its lower-cased text), so a 200-page filing stays cheap. Each edge keeps the
text that states it, its page and box; a co- or interim office says so in `extra["qualifier"]`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from h3.ontology.entities import entity_id, normalise_name
from h3.ontology.relations import Edge
from h3.resources.nlp.titles import (
    _LEGAL,
    _LETTER,
    _NAME,
    _NAME_IN_LINE,
    _NAME_ONLY_LINE,
    _OFFICE_WORD,
    _PARTICLES,
    _RELATION_ORDER,
    _SUFFIX,
    _TITLE,
    _TITLE_HEAD,
    _TITLE_START,
    _UP,
    RELATION_OF_ROLE,
    Office,
    ParsedTitle,
    _bind_areas,
    _is_issuer,
    parse_title,
    roles_in_title,
)

# the public names, the title model's among them (re-exported: callers import them from here)
__all__ = ["RELATION_OF_ROLE", "Office", "ParsedTitle", "RoleUnit", "extract_roles",
           "parse_title", "person_name", "roles_in_title"]


# ---- layouts -----------------------------------------------------------------------------------
_AGE_SEP = r"(?:[ \t]*[,–—:|-]?\s*(?:\(?\d{2}\)?\s*[,|]?\s*)?)(?:[,–—:|-]\s*)?"
# an organisation before a title: "Acme CEO", "Acme's Chairman"
_ORG_WORD = rf"(?!{_OFFICE_WORD}){_UP}[\w&.'’-]*?"
_ORG_BEFORE = (rf"(?:(?P<org>(?:{_ORG_WORD}[ \t]+){{0,3}}?{_ORG_WORD})(?:['’]s|['’])?[ \t]+"
               rf"(?={_TITLE_HEAD}))")
_CONNECTIVE = (r"(?:(?:is|was|has\s+been|has\s+served\s+as|serves\s+as|became|currently\s+"
               r"serves\s+as|joined\s+(?:us|the\s+Company)\s+as)\s+(?:our\s+|the\s+Company['’]s"
               r"\s+|its\s+|the\s+)?)")
_LISTED = re.compile(_NAME + _AGE_SEP + r"(?:Title:\s*)?\(?(?:" + _CONNECTIVE + r"|"
                     + _ORG_BEFORE + r")?" + _TITLE)
_SAID_BEFORE = re.compile(r"\b(?:said|says|according\s+to)\s+(?:the\s+Company['’]s\s+|our\s+|"
                          r"its\s+|" + _ORG_BEFORE + r")?" + _TITLE + r"[^\n\"“”]{3,140}?"
                          r"[ \t]+" + _NAME)
_SAID_AFTER = re.compile(r"(?<![\w,])" + _TITLE + r"[^\n\"“”]{3,120}?[ \t]+" + _NAME
                         + r"\s*,?\s+(?:said|says|stated|noted|added|commented)\b")
# a signature: "/s/ JANE Q. DOE" (often in capitals), then the title on the next line
_SIGNED = re.compile(r"/s/[ \t]*" + _NAME + r"[ \t]*\n\s*(?:Title:\s*)?\(?" + _TITLE)
_APPOINTED = re.compile(_NAME + r"(?:,\s*\d{2},)?\s+(?:was|has\s+been|had\s+been|will\s+be|is)\s+"
                        r"(?:appointed|named|elected|promoted\s+to)\s+(?:as\s+)?(?:the\s+)?"
                        r"(?:Company['’]s\s+|our\s+|its\s+|new\s+)*" + _TITLE)
# "the Board appointed Jane Q. Doe as Chief Financial Officer" (8-K Item 5.02)
_APPOINTS = re.compile(r"\b(?:appointed|named|elected|promoted|hired)\s+" + _NAME
                       + r"(?:,\s*\d{2},)?\s+(?:as|to\s+serve\s+as|to(?:\s+the\s+position\s+of)?)"
                       r"\s+(?:the\s+)?(?:Company['’]s\s+|our\s+|its\s+|new\s+)*" + _TITLE)
# a title, then the name in the next cell: "Chief Financial Officer: Jane Doe", "| CFO | Jane Doe |"
_TITLE_FIRST = re.compile(r"(?:^|\|)[ \t]*" + _TITLE + r"[^\n:|]{2,120}?[ \t]*(?::|\||[–—])[ \t]*"
                          + _NAME + r"[ \t]*(?:\||$)", re.MULTILINE)
_RULES = ((_LISTED, "roles:listed"), (_SIGNED, "roles:signed"), (_SAID_BEFORE, "roles:said"),
          (_SAID_AFTER, "roles:said"), (_APPOINTED, "roles:appointed"),
          (_APPOINTS, "roles:appointed"), (_TITLE_FIRST, "roles:title_first"))
# a word each layout needs (searched in the lower-cased page): a page without it skips the
# layout's pattern, which is costly on the long name lists of signature pages
_NEEDS = {"roles:signed": re.compile(r"/s/"),
          "roles:said": re.compile(r"said|says|according|stated|noted|added|commented"),
          "roles:appointed": re.compile(r"appoint|named|elected|promoted|hired"),
          "roles:title_first": re.compile(r"[:|–—]")}
# where offices are named, searched in the lower-cased page (a literal alternation is ~4x faster
# than the name patterns): the layouts are only searched around these words, and a page
# without any costs this one search
_HEAD = re.compile(r"c(?:hief|hair|eo\b|fo\b|\.[ef]\.o)|president|director(?!s)|board member|"
                   r"member of the board")
_ANY_OFFICE = re.compile(r"(?i)chief|\bc\.?[ef]\.?o\b|chair|director|president|board\s+member")
_BEFORE, _AFTER = 170, 230  # characters a layout runs before and after its office word
_NOT_NAME_WORDS = {
    "mr", "ms", "mrs", "dr", "the", "company", "board", "chief", "executive", "officer",
    "president", "vice", "senior", "director", "directors", "annual", "report", "form", "item",
    "part", "table", "contents", "united", "states", "securities", "exchange", "commission",
    "principal", "financial", "name", "age", "position", "title", "date", "signature",
    "signatures", "chairman", "corporate", "group", "inc", "corporation", "power", "attorney",
    "our", "we", "new", "york", "stock", "market", "global", "general", "counsel", "chair",
    "officers", "executives", "information", "about", "registrant", "management", "committee",
    "audit", "compensation", "nominating", "governance", "investor", "relations", "human",
    "resources", "announces", "announced", "reports", "names", "appoints", "transition",
    "letter", "shareholders", "stockholders", "results", "quarter", "fiscal", "year", "meeting",
    "proxy", "statement", "exhibit", "certification", "certifications", "section", "rule", "act",
    "pursuant", "llc", "llp", "ltd", "plc", "co", "corp", "holdings", "bank", "university",
    "association", "institute", "foundation", "trust", "fund", "partners", "capital", "services",
    "systems", "international", "national", "department", "division",
    "office", "business", "operations", "segment", "unit", "total", "net", "income", "revenue",
    "sales", "cash", "tax", "plan", "agreement", "award", "incentive", "code", "ethics",
    "conduct", "policy", "council", "club", "center", "centre", "school", "press", "release",
    "news", "media", "contact", "contacts", "investors", "dear", "sincerely", "by", "of", "and",
    "for", "at", "in", "on", "to", "with", "from", "vp", "evp", "svp", "ltd.", "inc."}
_PAST_BEFORE = re.compile(r"\b(?:former|formerly|retired|previously|prior|past|ex-|ex)\s*$",
                          re.IGNORECASE)
_EMPTY_CELLS = re.compile(r"\|(?:[ \t]*\|)+")
# spaCy labels that make a candidate "name" something else. Not ORG: the small model labels
# many person names it has not seen ORG in lists and signature lines (4 of 46 invented and
# real officer names even in a neutral "<name> said." probe, more in table lines), while it
# knows places well; organisations in a name's place are caught by their words instead.
_NOT_PERSON_LABELS = {"GPE", "LOC", "FAC", "NORP", "PRODUCT", "EVENT", "LAW", "WORK_OF_ART",
                      "DATE", "TIME", "LANGUAGE", "MONEY", "PERCENT", "CARDINAL", "ORDINAL"}


@dataclass(frozen=True, slots=True)
class RoleUnit:
    """One region's text with its page and box (lines kept: lists and tables need them)."""

    doc_id: str
    page: int
    bbox: tuple[float, float, float, float]
    text: str


def person_name(name: str) -> str:
    """'AMY E. HOOD' -> 'Amy E. Hood', 'JOSÉ ÁLVAREZ' -> 'José Álvarez', "ANA DE LA CRUZ" ->
    'Ana de la Cruz' (signatures are often in capitals); others as written."""
    words = " ".join(name.split()).split(" ")
    if all(not c.isalpha() or c.isupper() for c in "".join(words)):
        out = []
        for k, w in enumerate(words):
            if len(w.rstrip(".,")) <= 1 or w.rstrip(",") in ("II", "III", "IV"):
                out.append(w)
            elif 0 < k < len(words) - 1 and w.lower() in _PARTICLES:
                out.append(w.lower())
            else:  # "O'BRIEN-ŁUKASZ" -> "O'Brien-Łukasz"
                out.append(re.sub(rf"{_LETTER}+", lambda m: m.group(0).capitalize(), w))
        words = out
    # "Anna. G. Doe": a stray dot after a full given name (initials and "Jr." keep theirs)
    words = [w[:-1] if w.endswith(".") and len(w) > 2 and w.lower() not in ("jr.", "sr.")
             and k < len(words) - 1 else w for k, w in enumerate(words)]
    return " ".join(words)


def _plausible_name(name: str, forms: set[str]) -> bool:
    words = [w.strip(".,").lower() for w in name.split()]
    full = [w for w in words if len(w) > 1 and w not in _PARTICLES]
    if len(full) < 1 or len(words) < 2 or any(w in _NOT_NAME_WORDS for w in words):
        return False
    return normalise_name(name, "ORG") not in forms


def _person_cue(name: str) -> bool:
    """A name the small NER model is no judge of: capitals, an initial, a particle, a suffix
    (it labels many of those ORG, and they are rarely organisations)."""
    letters = [c for c in name if c.isalpha()]
    return (all(c.isupper() for c in letters) or bool(re.search(rf"(?:^|\s){_UP}\.", name))
            or any(w.lower() in _PARTICLES for w in name.split()[1:-1])
            or bool(re.search(_SUFFIX, name)))


def _issuer_forms(issuer: str, aliases: Iterable[str]) -> set[str]:
    # "of the Company", "of the Corporation": how a filing names its issuer
    return {normalise_name(f, "ORG") for f in (issuer, *aliases) if f} | {"company",
                                                                           "corporation"}


def _title_region(text: str, start: int, stop: int | None = None) -> tuple[str, str]:
    """The title text from `start` to the end of its line, with continuation lines ("and
    President, Shared Services", "(Principal Executive Officer)", a line after a trailing
    "and" or comma); and the line after it (a directors list's company line)."""
    end = text.find("\n", start)
    end = len(text) if end < 0 else end
    if stop is not None:
        return text[start:stop], ""
    region = text[start:end]
    while end < len(text):
        nl = text.find("\n", end + 1)
        nl = len(text) if nl < 0 else nl
        line = text[end + 1:nl]
        stripped = line.strip()
        if stripped and (re.match(r"(?i)(?:and|&)\s", stripped) or stripped[0].islower()
                         or stripped.startswith("(") or re.search(r"(?:,|\band|&)\s*$", region)):
            region += " " + stripped
            end = nl
            continue
        return region, stripped
    return region, ""


# the organisation that appoints: "Acme Corp. named ...", "the Board of Directors appointed"
_SUBJECT = re.compile(rf"(?P<org>(?:{_UP}[\w&.'’-]*[ \t]+){{1,5}})(?:has[ \t]+|have[ \t]+)?$")
_OWN_SUBJECT = re.compile(r"(?i)\b(?:board|directors|company|corporation|registrant|we|committee)"
                          r"\b")


def _other_subject(before: str, forms: set[str]) -> bool:
    """Whether the words right before "appointed"/"named" name an organisation that is not the
    issuer (then "its new chief executive" is that organisation's)."""
    m = _SUBJECT.search(before)
    if not m:
        return False
    org = m.group("org").strip()
    return not _OWN_SUBJECT.search(org) and not _is_issuer(org, forms) and not any(
        _is_issuer(org[k.start():], forms) for k in re.finditer(r"\S+", org))


_BY = re.compile(r"(?im)^[ \t]*By\b:?")


def _signer_above(text: str, by_start: int) -> str:
    """The company line right above a "By:" line ("" if none)."""
    lines = [ln.strip() for ln in text[max(0, by_start - 120):by_start].split("\n") if ln.strip()]
    return next((ln for ln in reversed(lines[-2:]) if _looks_like_org(ln)), "")


def _signs_for_other(text: str, name_start: int, forms: set[str]) -> bool:
    """A signature under another company's name ("OTHER CORP.\nBy: /s/ Jane Doe\nName: ...
    Title: Chief Financial Officer"): agreements filed as exhibits sign for both parties. Only
    on a page where two companies sign, so that a misread issuer name never drops the issuer's
    own signatures."""
    window_start = max(0, name_start - 160)
    by = list(_BY.finditer(text, window_start, name_start))
    if not by:
        return False
    signer = _signer_above(text, by[-1].start())
    if not signer or _is_issuer(signer, forms):
        return False
    signers = {normalise_name(s, "ORG") for m in _BY.finditer(text)
               if (s := _signer_above(text, m.start()))}
    return len(signers) >= 2


def _looks_like_org(line: str) -> bool:
    """A line that names a company: a legal suffix or a word organisations are named with."""
    if not line or len(line) > 90 or re.search(r"\d{2}|[;:]\s*$", line):
        return False
    return bool(_LEGAL.search(line)) or bool(re.search(
        r"(?i)\b(?:association|university|college|institute|foundation|bank|partners|capital|"
        r"holdings|ventures|group|fund|trust|agency|laboratories|labs|hospital|school)\b", line))


def extract_roles(units: Iterable[RoleUnit], issuer: str, aliases: Iterable[str] = ()
                  ) -> list[Edge]:
    """ceo_of / cfo_of / chair_of / director_of / appointed_to edges from person to issuer
    (see the module docstring); none when the issuer is unknown."""
    if not issuer:
        return []
    forms = _issuer_forms(issuer, aliases)
    by_page: dict[int, list[RoleUnit]] = {}
    for unit in units:
        by_page.setdefault(unit.page, []).append(unit)
    candidates: list[_Candidate] = []
    prose: list[_Sentence] = []
    for page in by_page.values():
        # the page's regions in reading order, one text: lists and signature blocks put a name
        # and its title in separate blocks
        texts = [_EMPTY_CELLS.sub("|", u.text) for u in page]
        starts, pos = [], 0
        for t in texts:
            starts.append(pos)
            pos += len(t) + 1
        text = "\n".join(texts).replace("\xa0", " ")
        windows = _windows(text)
        if not windows:
            continue
        found = _page_candidates(page, starts, text, forms, windows)
        candidates += found
        prose += _prose_sentences(page, starts, text, found, forms)
    checked = _spacy_check(candidates, prose)
    edges: dict[tuple, Edge] = {}
    tail_id = entity_id("ORG", issuer)
    for c in checked:
        name = person_name(c.name)
        first = c.page[0]
        touched = [u for u, a, b in zip(c.page, c.starts, c.starts[1:] + [10**9], strict=True)
                   if a < c.span[1] and c.span[0] < b]
        boxes = [u.bbox for u in touched] or [first.bbox]
        # the box: every region the statement runs over (a name and its title are often
        # separate text blocks: bold name, plain title)
        bbox = (min(b[0] for b in boxes), min(b[1] for b in boxes), max(b[2] for b in boxes),
                max(b[3] for b in boxes))
        evidence = " ".join(c.evidence.split())
        for relation, extra in c.relations:
            key = (first.page, relation, normalise_name(name, "PERSON"))
            if key not in edges:
                edges[key] = Edge(entity_id("PERSON", name), tail_id, relation, name, issuer,
                                  first.doc_id, first.page, bbox, evidence, rule=c.rule,
                                  extra=extra)
    return list(edges.values())


@dataclass(slots=True)
class _Candidate:
    page: list[RoleUnit]
    starts: list[int]
    span: tuple[int, int]
    name: str
    relations: list[tuple[str, dict]]
    evidence: str
    rule: str
    context: str = ""  # the line spaCy reads to judge the name ("" = no check)
    name_at: int = 0  # the name's offset in `context`
    org_line: str = ""  # a possible company line after the title (spaCy decides)
    org_offices: list[Office] = field(default_factory=list)


def _relations(offices: list[Office], rule: str, title: str) -> list[tuple[str, dict]]:
    out: list[tuple[str, dict]] = []
    if rule == "roles:appointed":
        out.append(("appointed_to", {"role": " ".join(title.split())}))
    for relation in _RELATION_ORDER:
        held = [o for o in offices if o.relation == relation and not o.scope]
        if held:
            quals = sorted({q for o in held for q in o.qualifiers & {"co", "interim"}})
            out.append((relation, {"qualifier": quals[0]} if quals else {}))
    return out


def _windows(text: str) -> list[tuple[int, int]]:
    """Stretches of the page around its office words (merged), where the layouts can match."""
    out: list[list[int]] = []
    for m in _HEAD.finditer(text.lower()):
        a, b = max(0, m.start() - _BEFORE), min(len(text), m.end() + _AFTER)
        a = text.rfind("\n", 0, a) + 1  # a name never runs over a line: never cut one
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return [(a, b) for a, b in out]


def _page_candidates(page: list[RoleUnit], starts: list[int], text: str, forms: set[str],
                     windows: list[tuple[int, int]]) -> list[_Candidate]:
    """Name-title pairs the layouts state on one page (before spaCy's check)."""
    out: list[_Candidate] = []
    columns, taken = _columns(text)
    seen: set[tuple[int, int]] = set()
    for (name_start, name_end), (t_start, t_end) in columns:
        _add(out, page, starts, text, forms, name_start, name_end, t_start, "roles:columns",
             stop=t_end, seen=seen)
    lower = text.lower()
    for pattern, rule in _RULES:
        if rule in _NEEDS and not _NEEDS[rule].search(lower):
            continue
        for m in (m for a, b in windows for m in pattern.finditer(text, a, b)):
            if m.start("name") in taken:
                continue
            org = m.groupdict().get("org")
            if org and not _is_issuer(org, forms):
                continue  # "Other Corp. CEO Jane Doe": another company's officer
            t_start = m.start("title")
            stop = None
            if rule in ("roles:said", "roles:title_first") and m.start("name") > t_start:
                stop = m.start("name")
            _add(out, page, starts, text, forms, m.start("name"), m.end("name"), t_start, rule,
                 stop=stop, seen=seen, match_start=m.start(), exact=stop is not None)
    return out


def _add(out: list[_Candidate], page, starts, text: str, forms: set[str], name_start: int,
         name_end: int, t_start: int, rule: str, stop: int | None = None,
         seen: set | None = None, match_start: int | None = None, exact: bool = False,
         checked: bool = False) -> None:
    name = text[name_start:name_end]
    if not _plausible_name(name, forms):
        return
    region, next_line = _title_region(text, t_start, stop)
    if exact:  # a title before the name: "said Chairman and CEO Jane Doe"
        region = re.sub(r"[\s,:|–—-]+$", "", region)
    parsed = parse_title(region)
    if not parsed.offices or parsed.past or region[parsed.end:].lstrip(" \t").startswith(":"):
        return  # "CEO: Chief Executive Officer" defines a term (a glossary), names nobody
    if exact and parsed.end < len(region.rstrip()):
        return  # words between the title and the name that are not part of the title
    if _signs_for_other(text, name_start, forms):
        return
    if match_start is not None and match_start < name_start and rule == "roles:appointed" \
            and _other_subject(text[max(0, match_start - 80):match_start], forms):
        return  # "Other Corp. named Jane Doe as its chief executive": not the issuer's office
    begin = match_start if match_start is not None else name_start
    before = text[max(0, min(begin, name_start) - 24):min(begin, name_start)]
    if _PAST_BEFORE.search(before) or _PAST_BEFORE.search(text[max(0, t_start - 12):t_start]):
        return
    # a company line under the title (directors lists), unless the title is a signature's
    # "Title:" field: the line after it starts the next signature block
    org_line = next_line if stop is None and parsed.end >= len(region.rstrip(" ,.;")) and not \
        re.search(r"Title:\s*\(?$", text[max(0, t_start - 10):t_start]) else ""
    offices = _bind_areas(parsed, forms)
    possible = _bind_areas(parsed, forms, org_line) if org_line else offices
    relations = _relations(offices, rule, region[:parsed.end])
    if not any(r != "appointed_to" for r, _ in relations) and rule != "roles:appointed":
        return
    key = (name_start, t_start)
    if seen is not None:
        if key in seen:
            return
        seen.add(key)
    end = max(name_end, t_start + parsed.end)
    start = min(name_start, t_start, begin)
    line_start = text.rfind("\n", 0, name_start) + 1
    line_end = text.find("\n", name_end)
    context = text[line_start:len(text) if line_end < 0 else line_end]
    # the NER judges a name only in a line with words around it: alone on its line (lists,
    # signatures) it labelled 3 real officers of the development set places and no non-person
    judged = not checked and not _person_cue(name) and len(context.split()) >= len(
        name.split()) + 4
    cand = _Candidate(page, starts, (start, end), name, relations, text[start:end], rule,
                      context if judged else "", name_start - line_start)
    if org_line and not _is_issuer(org_line, forms) and possible != offices \
            and not _NAME_ONLY_LINE.match(org_line) and not re.search(r"[/_]", org_line):
        if _looks_like_org(org_line):
            cand.relations = _relations(possible, rule, region[:parsed.end])
        elif (not _ANY_OFFICE.search(org_line) and not _NAME_IN_LINE.search(org_line)
              and len(org_line.split()) <= 8 and not re.search(r"[\d:;]|[^.]\.$", org_line)):
            cand.org_line, cand.org_offices = org_line, possible  # spaCy decides
    if cand.relations:
        out.append(cand)


def _columns(text: str) -> tuple[list[tuple[tuple[int, int], tuple[int, int]]], set[int]]:
    """Two-column signature blocks: k >= 2 lines that are each just a name, then the titles (one
    per line, continuation lines joined): the i-th title is the i-th name's. Returns the (name
    span, title span) pairs and the name offsets of such runs (no other rule pairs those: the
    last name of the run sits right above the first name's title)."""
    pairs: list[tuple[tuple[int, int], tuple[int, int]]] = []
    taken: set[int] = set()
    lines, pos = [], 0
    for line in text.split("\n"):
        lines.append((pos, line))
        pos += len(line) + 1
    k = 0
    while k < len(lines):
        run = []
        while k < len(lines) and _NAME_ONLY_LINE.match(lines[k][1]):
            m = re.search(_NAME, lines[k][1])
            if not m:
                break
            run.append((lines[k][0] + m.start("name"), lines[k][0] + m.end("name")))
            k += 1
        if len(run) < 2:
            k += 0 if run else 1
            continue
        titles: list[list[int]] = []
        while k < len(lines):
            start, line = lines[k]
            stripped = line.strip()
            if titles and stripped and (re.match(r"(?i)(?:and|&)\s", stripped)
                                        or stripped[0].islower() or stripped.startswith("(")):
                titles[-1][1] = start + len(line)  # the title above goes on
            elif re.match(_TITLE_START, stripped):
                titles.append([start + len(line) - len(line.lstrip()), start + len(line)])
            else:
                break
            k += 1
        if titles:
            pairs += [(n, (t[0], t[1])) for n, t in zip(run, titles, strict=False)]
            taken.update(n[0] for n in run)
    return pairs, taken


# a person's place next to a CEO/CFO/chair office in prose: "<person>, [Acme's] CEO", "said
# [Acme] CEO <person>", "CEO <person> said", "<person> ... was named CEO"
_PROSE_CUE = re.compile(
    r"(?:,|\bsaid|\bsays|\bnamed|\bappointed|\belected|\bserves\s+as|\bserved\s+as|\bis|\bas)"
    r"\s+(?:the\s+|our\s+|its\s+)?(?:[A-Z][\w’'.&-]*\s+){0,3}?(?:co-|interim\s+|acting\s+)?"
    r"(?:chief\s+(?:executive|financial)|c\.?[ef]\.?o\b|chair)|"
    r"(?:chief\s+(?:executive|financial)(?:\s+officer)?|\bc\.?[ef]\.?o|chair(?:man|woman|person)?)"
    r"\s+[A-Z]", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class _Sentence:
    page: list[RoleUnit]
    starts: list[int]
    text: str  # the page's text
    span: tuple[int, int]  # the sentence in it
    forms: frozenset[str]

    @property
    def sentence(self) -> str:
        return self.text[self.span[0]:self.span[1]]


# a word the name pattern cannot read next to a capitalised one: a lower-case prefix joined
# by a hyphen or apostrophe ("al-Hassan", "d'Ormesson") or an unknown lower-case particle
# between capitalised words ("Yusuf ibn Rashid"); only such sentences go to the NER
_ODD_NAME = re.compile(
    rf"{_UP}{_LETTER}+[ \t]+(?:[a-z]{{1,4}}['’-]{_UP}{_LETTER}+|(?P<mid>[a-z]{{2,4}})[ \t]+{_UP})")
# short English function words (the middle word of "Officer from February" is no particle)
_FUNCTION_WORDS = set(
    "a an and are as at be been but by can did do does for from had has have her his how if in "
    "into is it its may more most not of on onto or our out over per she so than that the their "
    "them then they this to too two up upon us via was we were what when who why will with "
    "would you your also all any both each few many much must new nor now off old one only "
    "other own same some such very".split()) | set(_PARTICLES)


def _odd_name(sentence: str) -> bool:
    """Whether a sentence holds a name shape the pattern cannot read (`_ODD_NAME`)."""
    return any(m.group("mid") is None or m.group("mid") not in _FUNCTION_WORDS
               for m in _ODD_NAME.finditer(sentence))


def _prose_sentences(page, starts, text: str, found: list[_Candidate], forms: set[str]
                     ) -> list[_Sentence]:
    """Sentences of prose regions where a person may stand next to a CEO/CFO/chair office
    (`_PROSE_CUE`) and the patterns paired nobody: spaCy reads those for people, which finds
    the names a pattern cannot read ("Omar al-Hassan")."""
    out = []
    covered = [c.span for c in found]
    for unit_start, unit in zip(starts, page, strict=True):
        body = unit.text
        if len(body) < 40 or not _odd_name(body) or not _PROSE_CUE.search(body):
            continue
        for m in re.finditer(r"[^.!?]*(?:[.!?](?=\s|$|[”\"])|$)", body):
            sentence = m.group(0)
            if len(sentence.split()) < 5 or len(sentence) > 400 or not _odd_name(
                    sentence) or not _PROSE_CUE.search(sentence):
                continue
            a, b = unit_start + m.start(), unit_start + m.end()
            if any(s < b and a < e for s, e in covered):
                continue
            # a capitalised word that is no office word and does not start the sentence
            words = re.findall(rf"(?<=[\s,(“\"])({_UP}{_LETTER}+)", sentence)
            if not any(w.lower() not in _NOT_NAME_WORDS and not re.fullmatch(
                    _OFFICE_WORD, w) for w in words):
                continue
            out.append(_Sentence(page, starts, text, (a, b), frozenset(forms)))
    return out


def _spacy_check(candidates: list[_Candidate], prose: list[_Sentence]) -> list[_Candidate]:
    """Runs the NER once over the lines that need it: drops pattern names it reads as places,
    reads company lines under titles, and pairs the people it finds in prose sentences with
    the offices next to them (the layouts again, with that person in the name's place)."""
    texts = sorted({c.context for c in candidates if c.context}
                   | {c.org_line for c in candidates if c.org_line}
                   | {p.sentence for p in prose})
    if not texts:
        return candidates
    try:
        from h3.resources.nlp.pipeline import english

        nlp = english()
    except Exception:  # noqa: BLE001 - no model installed: the patterns alone decide
        return candidates
    ents = {t: [(e.start_char, e.end_char, e.label_) for e in doc.ents]
            for t, doc in zip(texts, nlp.pipe(texts, batch_size=64), strict=True)}
    out = []
    for c in candidates:
        if c.context:
            a, b = c.name_at, c.name_at + len(c.name)
            covering = [lab for s, e, lab in ents[c.context] if s <= a and b <= e]
            if covering and all(lab in _NOT_PERSON_LABELS for lab in covering):
                continue  # "North Carolina, Director": a place, not a person
        if c.org_line:
            labels = {lab for *_, lab in ents[c.org_line]}
            if "ORG" in labels and "PERSON" not in labels:
                c.relations = _relations(c.org_offices, c.rule, "")
                if not c.relations:
                    continue
        out.append(c)
    for p in prose:
        a, b = p.span
        for s, e, label in ents[p.sentence]:
            person = p.sentence[s:e]
            if label != "PERSON" or len(person.split()) < 2 or "\n" in person:
                continue
            # the person's words as plain name-shaped words of the same length, so the layouts
            # (compiled once) match there and every offset still points into the page
            masked = re.sub(r"\S+", lambda m: "X" + "x" * (len(m.group(0)) - 1), person)
            text = p.text[:a + s] + masked + p.text[a + e:]
            seen: set[tuple[int, int]] = set()
            for pattern, rule in _RULES:
                for m in pattern.finditer(text, a, b):
                    if (m.start("name"), m.end("name")) != (a + s, a + e) or (
                            m.groupdict().get("org") and not _is_issuer(m.group("org"),
                                                                         set(p.forms))):
                        continue
                    t = m.start("title")
                    stop = m.start("name") if m.start("name") > t else None
                    _add(out, p.page, p.starts, p.text, set(p.forms), a + s, a + e, t, rule,
                         stop=stop, seen=seen, match_start=m.start(), exact=stop is not None,
                         checked=True)
    return out
