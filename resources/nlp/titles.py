"""The title model of resources/nlp/roles.py: what offices a title phrase states.

`parse_title` reads a title phrase such as "Executive Vice President, Finance and Chief Financial
Officer" left to right into `Office`s (a vice-presidency scoped to "Finance", and a CFO), each
with its qualifiers (co-, interim, former, future, deputy, vice) and, where the title names one,
the organisation or unit it belongs to (`_bind_areas`); `roles_in_title` turns a title into the
graph relations it states for the issuer (`RELATION_OF_ROLE`). The word lists the parser reads
titles with (functions of chief officers, acronyms, qualifiers, office heads, ranks) live here.

It is its own module because it is a model of its own: it knows nothing of page layouts,
spaCy or edges, and can be read, tested and changed without the layout rules of
`resources.nlp.roles` (lists, tables, signature blocks, prose), which find a name next to a
title and then ask this module what the title says. The regex pieces both halves use live here
too and roles.py imports them: the name pattern (`_NAME`, `_NAME_ONLY_LINE`; the parser needs
it to tell the next entry's name from a unit after an office: "..., KATHY N. WALLER, Executive
Vice President"), where a title may start (`_TITLE_HEAD`, `_TITLE_START`, `_TITLE`), the
office words (`_OFFICE_WORD`) and the legal-form suffixes of company names (`_LEGAL`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from h3.ontology.entities import normalise_name

# ---- names -------------------------------------------------------------------------------------
# Upper-case letters of the Latin, Greek and Cyrillic blocks (Python's re has no \p{Lu}).
_UPPER = "".join(c for c in map(chr, range(0x41, 0x2000)) if c.isupper() or c.istitle())
_UP = f"[{_UPPER}]"
_LETTER = r"[^\W\d_]"
# words of office language: never part of a name, and what a title is made of
_OFFICE_WORDS = (
    "president|presidents|chief|executive|executives|officer|officers|chairman|chairwoman|"
    "chairperson|chair|chairs|vice|senior|board|director|directors|treasurer|controller|"
    "comptroller|secretary|counsel|founder|cofounder|co-founder|member|members|principal|"
    "interim|acting|former|retired|emeritus|deputy|assistant|associate|lead|independent|"
    "non-executive|managing|general|manager|group|global|corporate|ceo|cfo|coo|cao|cto|cio|clo|"
    "cmo|cso|chro|cco|cro|cdo|cpo|financial|finance|operating|operations|administrative|"
    "accounting|trustee|partner|elect|designate|title|name|position|age|signature|date")
_OFFICE_WORD = rf"(?i:(?:{_OFFICE_WORDS}))(?!{_LETTER})"
# one word of a name: "Álvarez", "O'Brien-Łukasz", "McMillon", "DOE", "Min-jun"
# (the cheap capital test first: the office-word test then runs on capitalised words only)
_TOKEN = (rf"(?={_UP})(?!{_OFFICE_WORD}){_UP}(?:{_LETTER}|['’](?={_LETTER})|-(?={_LETTER}))*"
          rf"{_LETTER}")
_INITIAL = rf"{_UP}\.(?:[ \t]?{_UP}\.)?"
_PARTICLES = ("de", "del", "della", "der", "den", "di", "da", "das", "dos", "du", "la", "le",
              "van", "von", "ter", "ten", "bin", "al", "y", "st.")
_PARTICLE = r"(?:" + "|".join(re.escape(p) for p in _PARTICLES) + r")"
_SUFFIX = r"(?:Jr\.?|Sr\.?|JR\.?|SR\.?|II|III|IV)(?![\w])"
_HONORIFIC = r"(?:(?:Mr|Ms|Mrs|Miss|Mx|Dr|Prof|Sir|Dame|MR|MS|MRS|DR)\.?[ \t]+)"
# two to five parts on one line (lists put a heading on the line before), the last a full word
_NAME_BODY = (rf"(?:{_TOKEN}\.[ \t]+(?={_INITIAL}[ \t]))?"  # a stray dot: "Anna. G. Doe"
              rf"(?:(?:{_TOKEN}|{_INITIAL})[ \t]+(?:{_PARTICLE}[ \t]+){{0,2}}){{1,4}}{_TOKEN}"
              rf"(?:,?[ \t]+{_SUFFIX})?")
_NAME = rf"(?={_UP})(?<![\w.’'-]){_HONORIFIC}?(?P<name>{_NAME_BODY})(?:\(\d{{1,2}}\)|[*†‡])*"
_NAME_IN_LINE = re.compile(_NAME)
_NAME_ONLY_LINE = re.compile(rf"^[ \t]*{_HONORIFIC}?{_NAME_BODY}(?:\(\d{{1,2}}\)|[*†‡])*[ \t]*$")

# ---- titles ------------------------------------------------------------------------------------
# where a title may start (the parser decides what it holds)
_TITLE_HEAD = (r"(?i:(?:(?:co|ex|non|vice)[\s-]+|former\s+|retired\s+|interim\s+|acting\s+|"
               r"deputy\s+|senior\s+|executive\s+|group\s+|global\s+|lead\s+|independent\s+|"
               r"managing\s+|incoming\s+|corporate\s+|a\s+)*"
               r"(?:chief|president|chair(?:man|woman|person)?|director|treasurer|controller|"
               r"secretary|founder|co-?founder|member|board\s+member|trustee|general\s+counsel|"
               r"c\.?[efo]\.?o\.?|cao|cto|cio|clo)(?![^\W\d_]))")
_TITLE_START = rf"(?={_TITLE_HEAD})"
_TITLE = r"(?P<title>" + _TITLE_START + r")"
_FUNCTIONS = {
    "executive": "ceo", "financial": "cfo", "finance": "cfo", "operating": "coo",
    "operations": "coo", "administrative": "cao", "administration": "cao",
    "accounting": "accounting", "legal": "legal", "technology": "cto", "technical": "cto",
    "information": "cio", "investment": "investment", "marketing": "cmo", "people": "people",
    "human": "people", "resources": "people", "risk": "risk", "strategy": "strategy",
    "strategic": "strategy", "commercial": "commercial", "digital": "digital",
    "compliance": "compliance", "communications": "communications", "customer": "customer",
    "product": "product", "medical": "medical", "scientific": "science", "science": "science",
    "revenue": "revenue", "business": "business", "growth": "growth", "data": "data",
    "security": "security", "sustainability": "sustainability", "diversity": "diversity",
    "supply": "supply", "chain": "supply", "merchandising": "merchandising", "tax": "tax",
    "audit": "audit", "innovation": "innovation", "development": "development",
    "transformation": "transformation", "brand": "brand", "creative": "creative",
    "sales": "sales", "ethics": "compliance", "talent": "people",
}
_ACRONYMS = {"ceo": "ceo", "cfo": "cfo", "coo": "coo", "cao": "cao", "cto": "cto", "cio": "cio",
             "clo": "legal", "cmo": "cmo", "cso": "strategy", "chro": "people", "cco": "commercial",
             "cro": "risk", "cdo": "digital", "cpo": "people"}
_FORMER = {"former", "formerly", "retired", "ex", "past", "previous", "previously", "prior",
           "outgoing", "emeritus"}
_FUTURE = {"elect", "designate", "incoming", "nominee"}
_CONNECTORS = {"and", "&", "/", "a", "an", "our", "its", "the", "as", "-", "+"}
_JOINERS = {"and", "&", ",", "/"}  # between the functions of one chief officer
# words that are an office by themselves (the qualifiers before them start its text)
_OFFICE_HEADS = {"chief", "president", "presidents", "chair", "chairman", "chairwoman",
                 "chairperson", "director", "member", "board", "treasurer", "controller",
                 "comptroller", "secretary", "founder", "cofounder", "co-founder", "trustee",
                 "partner", "counsel", "officer", "head", "c.e.o", "c.f.o", "c.o.o", "ceo", "cfo",
                 "coo", "cao", "cto", "cio", "clo", "cmo", "cso", "chro", "cco", "cro", "cdo",
                 "cpo"}
_RANKS = {"president", "vp", "general_manager", "managing_director", "head"}
# words that go on a title (what may follow a modifier such as "Group" or "Global")
_TITLE_LANGUAGE = ({"chief", "president", "chair", "chairman", "chairwoman", "chairperson",
                    "director", "vice", "executive", "senior", "officer", "treasurer",
                    "controller", "secretary", "counsel", "general", "managing", "head", "-",
                    "co", "deputy", "interim", "acting", "independent", "lead"}
                   | set(_ACRONYMS) | set(_FUNCTIONS))
# an office -> the relation it states (only these become edges)
RELATION_OF_ROLE = {"ceo": "ceo_of", "cfo": "cfo_of", "chair": "chair_of",
                    "director": "director_of", "committee_chair": "director_of"}
_RELATION_ORDER = ("ceo_of", "cfo_of", "chair_of", "director_of")
_ISSUER_WORDS = {"company", "corporation", "registrant", "board", "firm", "group", "bank",
                 "partnership", "trust", "fund", "issuer"}
_LEGAL = re.compile(r"(?i)(?:,?\s+|\b)(?:inc|incorporated|corp|corporation|company|co|llc|l\.l\.c|"
                    r"llp|lp|l\.p|ltd|limited|plc|n\.v|s\.a|ag|se|gmbh|holdings|group|"
                    r"partners|association|university|foundation|institute|trust|bank|"
                    r"fund|capital|ventures)\.?\s*$")


@dataclass(frozen=True, slots=True)
class Office:
    """One office a title states. `role`: "ceo", "cfo", "coo", "chair", "director",
    "president", "vp", ... ("chief_<function>" for other chief officers); `qualifiers`: "co",
    "interim", "former", "future", "deputy", "vice"; `scope`: the organisation or unit named
    after it when that is not the issuer ("" for the issuer, the board or "the Company")."""

    role: str
    text: str
    qualifiers: frozenset[str] = frozenset()
    scope: str = ""
    group: int = 0

    @property
    def current(self) -> bool:
        """Held now (co- and interim offices are; former, future and deputy ones are not)."""
        return not self.qualifiers & {"former", "future", "deputy", "vice"}

    @property
    def relation(self) -> str | None:
        """The graph relation the office states for its organisation, if any."""
        return RELATION_OF_ROLE.get(self.role) if self.current else None


@dataclass(slots=True)
class ParsedTitle:
    """A title phrase read into offices; `end`: characters of the phrase it used; `areas`:
    the names after an office (", Finance", "of Other Corp.") as (text, introducer, index of
    the office before it)."""

    offices: list[Office] = field(default_factory=list)
    end: int = 0
    areas: list[tuple[str, str, int]] = field(default_factory=list)
    past: bool = False  # a period in the past follows ("2014-2019", "until 2020")


_TOKENS = re.compile(r"[^\W\d_]+(?:['’.][^\W\d_]+)*\.?|\d+|\S")
_ABBREVIATION = re.compile(r"(?i)^(?:[^\W\d_]|inc|corp|co|ltd|llc|plc|jr|sr|st|no|dept|intl|"
                           r"u\.s|n\.v|s\.a|l\.p|l\.l\.c|c\.e\.o|c\.f\.o|c\.o\.o)\.$")
_PAST_AFTER = re.compile(r"^\s*[,(]?\s*(?:from\s+)?(?:[A-Z][a-z]+\.?\s+)?(?:19|20)\d{2}\s*"
                         r"(?:[-–—]|to|until|through)\s*(?:[A-Z][a-z]+\.?\s+)?(?:19|20)\d{2}|"
                         r"^\s*,?\s*(?:from|until|through|between)\s+(?:[A-Z][a-z]+\s+)?"
                         r"(?:\d{1,2},\s+)?(?:19|20)\d{2}|^\s*\(?\s*(?:retired|former)\s*\)?",
                         re.IGNORECASE)


def _is_cap(word: str) -> bool:
    return word[:1].isupper() or word[:1].isdigit()


def parse_title(text: str) -> ParsedTitle:
    """The offices a title phrase states, read left to right (module docstring): qualifiers
    before an office ("former", "interim", "co-", "vice", "deputy"), chief officers with one
    or several functions ("Chief Financial and Administrative Officer"), acronyms ("CEO",
    "C.F.O."), chairs ("Vice Chair" is no chair; "Chair of the Audit Committee" chairs a
    committee), directors ("Managing Director" and "Director of Sales" are no board seats), and
    the organisation or unit after an office (", Finance", "of Other Corp."). Reading stops at
    the first word that is neither office language nor a name after an office."""
    toks = [(m.group(0), m.start(), m.end()) for m in _TOKENS.finditer(text)]
    low = [t[0].lower().rstrip(".") if t[0] != "." else "." for t in toks]
    out = ParsedTitle()
    quals: set[str] = set()  # qualifiers read for the next office
    carry: set[str] = set()  # "former Chairman and CEO": "former" runs over "and"
    flags: set[str] = set()  # words that only shape the next office ("Executive Director")
    group = 0  # comma-separated part of the title
    first: int | None = None  # where the next office's words begin ("Interim Chief ...")
    i, n = 0, len(toks)

    def add(roles: Iterable[str], end: int, extra: Iterable[str] = ()) -> int:
        """Records offices spanning tokens [first or i, end); returns the index after any
        complement ("Emeritus", "-elect")."""
        nonlocal quals, flags, first
        q = frozenset(quals | set(extra) | (carry if not quals else set()))
        begin = toks[i if first is None else first][1]
        for role in roles:
            out.offices.append(Office(role, text[begin:toks[end - 1][2]], q, "", group))
        out.end = toks[end - 1][2]
        carry.clear()
        carry.update(q & {"former", "interim", "future"})
        quals, flags, first = set(), set(), None
        return _after_office(toks, low, end, out)

    def nxt(k: int) -> str:
        return low[k] if k < n else ""

    while i < n:
        w = low[i]
        if i and out.offices and toks[i - 1][0].endswith(".") and not _ABBREVIATION.match(
                toks[i - 1][0]):
            break  # "... Chief Executive Officer. Ms. Doe has served": the sentence ended
        if w in (",", ";"):
            group += 1
            carry.clear()
            i += 1
            continue
        if w == "of" and nxt(i + 1) == "the" and nxt(i + 2) in _ISSUER_WORDS:
            i += 3  # "... and Director of the Company": the issuer
            out.end = toks[i - 1][2]
            continue
        if w in _CONNECTORS:
            i += 1
            continue
        if w == "(":  # "(Retired)", "(Principal Financial Officer)", "(Director)"
            close = next((k for k in range(i + 1, min(n, i + 10)) if low[k] == ")"), None)
            if close is None:
                break
            if {low[k] for k in range(i + 1, close)} & _FORMER:
                out.offices = [_qualified(o, "former") for o in out.offices]
            else:
                sub = parse_title(text[toks[i + 1][1]:toks[close][1]])
                if not sub.offices:
                    break
                out.offices += [Office(o.role, o.text, o.qualifiers, o.scope, group)
                                for o in sub.offices if o.role != "principal"]
            out.end = toks[close][2]
            i = close + 1
            continue
        if first is None and w not in _OFFICE_HEADS:
            first = i
        if w in _FORMER:
            quals.add("former")
        elif w in ("interim", "acting", "temporary"):
            quals.add("interim")
        elif w in ("incoming", "designate") or (w == "future"):
            quals.add("future")
        elif w == "co" or w == "co-":
            quals.add("co")
        elif w in ("deputy", "assistant", "associate"):
            quals.add("deputy")
        elif w == "vice":
            quals.add("vice")
        elif w in ("senior", "group", "global", "corporate", "lead", "independent", "first",
                   "founding", "worldwide") and nxt(i + 1) in _TITLE_LANGUAGE:
            flags.add(w)  # "Group Chief Executive"; "CEO Global Devices" names a unit
        elif w == "non" and nxt(i + 1) == "-":
            flags.add("non")
            i += 1
        elif w == "non-executive":
            flags.add("non")
        elif w == "executive" and nxt(i + 1) in ("vice", "chairman", "chair", "chairwoman",
                                                  "chairperson", "director", "president"):
            flags.add("executive")
        elif w == "managing" and nxt(i + 1) in ("director", "partner"):
            i = add(["managing_director"], i + 2)  # a rank (or a UK chief executive): no seat
            continue
        elif w == "general" and nxt(i + 1) in ("counsel", "manager"):
            i = add(["general_" + nxt(i + 1)], i + 2)
            continue
        elif w == "principal" and nxt(i + 1) in ("executive", "financial", "accounting",
                                                 "operating") and nxt(i + 2) == "officer":
            i = add(["principal"], i + 3)  # the SEC's signing capacity, not an office
            continue
        elif w == "chief":
            j, functions = i + 1, []
            while j < n and j - i <= 8 and (low[j] in _FUNCTIONS or low[j] in _JOINERS):
                if low[j] in _FUNCTIONS:
                    functions.append(_FUNCTIONS[low[j]])
                j += 1
            while j > i + 1 and low[j - 1] in _JOINERS:
                j -= 1  # "Chief Financial Officer and": the connector is not the office's
            if nxt(j) == "officer" and functions:  # "Chief Financial and Administrative Officer"
                roles = [f if f in ("ceo", "cfo", "coo") else f"chief_{f}" for f in functions]
                i = add(dict.fromkeys(roles), j + 1)
            elif functions and functions[0] == "ceo":  # "Group Chief Executive"
                i = add(["ceo"], i + 2)
            else:  # "Chief of Staff", "Chief Economist": an office, none of ours
                i = add(["chief_other"], min(n, i + 2))
            continue
        elif w in ("c.e.o", "c.f.o", "c.o.o") or w in _ACRONYMS:
            role = _ACRONYMS[w.replace(".", "")]
            i = add([role if role in ("ceo", "cfo", "coo") else f"chief_{role}"], i + 1)
            continue
        elif w in ("president", "presidents"):
            i = add(["vp" if "vice" in quals else "president"], i + 1)
            continue
        elif w in ("chair", "chairman", "chairwoman", "chairperson"):
            j, role = i + 1, "chair"
            if nxt(j) == "of" and nxt(j + 1) == "the" and nxt(j + 2) == "board":
                j += 5 if nxt(j + 3) == "of" and nxt(j + 4) == "directors" else 3
            elif nxt(j) == "of" and "committee" in low[j:j + 7]:
                j = low.index("committee", j) + 1  # "Chair of the Audit Committee"
                role = "committee_chair"
            i = add([role], j)
            continue
        elif w == "committee" and out.offices:
            break
        elif w == "director":
            # "Executive Director": a board seat in some countries, a job title in others
            i = add(["executive_director" if "executive" in flags else "director"], i + 1)
            continue
        elif w == "member" and low[i + 1:i + 4] == ["of", "the", "board"]:
            j = i + 4 + (2 if low[i + 4:i + 6] == ["of", "directors"] else 0)
            i = add(["director"], j)
            continue
        elif w == "board" and nxt(i + 1) == "member":
            i = add(["director"], i + 2)
            continue
        elif w in ("treasurer", "controller", "comptroller", "secretary", "founder", "cofounder",
                   "co-founder", "trustee", "partner", "counsel", "officer"):
            i = add([{"comptroller": "controller", "cofounder": "founder",
                      "co-founder": "founder"}.get(w, w)], i + 1)
            continue
        elif w == "head" and nxt(i + 1) == "of":
            i = add(["head"], i + 1)
            continue
        elif out.offices and (w in ("of", "at", "for") or _is_cap(toks[i][0]) and i > 0 and (
                low[i - 1] == "," or (out.end == toks[i - 1][2]
                                      and text[toks[i - 1][2]:toks[i][1]] == " "))):
            # an organisation or unit after an office: "of Other Corp.", ", Finance", and
            # "CEO Cloud Platforms" (one space: wider gaps separate table columns)
            k = _area(toks, low, i + (1 if w in ("of", "at", "for") else 0), text)
            if k is None or (w not in ("of", "at", "for") and _next_person(
                    text[toks[i][1]:toks[k - 1][2]])):
                break  # "..., KATHY N. WALLER, Executive Vice President": the next entry
            intro = w if w in ("of", "at", "for") else ","
            begin = toks[i + (1 if intro != "," else 0)][1]
            out.areas.append((text[begin:toks[k - 1][2]], intro, len(out.offices) - 1))
            out.end = toks[k - 1][2]
            i, first = k, None
            continue
        else:
            break
        i += 1
    out.past = bool(_PAST_AFTER.match(text[out.end:out.end + 60]))
    if low and low[0] in _FORMER:  # "Retired Chairman, CEO and President, Other Corp."
        first_area = min((a[2] for a in out.areas), default=len(out.offices) - 1)
        out.offices = [_qualified(o, "former") if k <= first_area else o
                       for k, o in enumerate(out.offices)]
    return out


def _qualified(office: Office, qualifier: str) -> Office:
    return Office(office.role, office.text, office.qualifiers | {qualifier}, office.scope,
                  office.group)


def _after_office(toks, low: list[str], i: int, out: ParsedTitle) -> int:
    """Complements right after the last office: "Emeritus" (past), "-elect", "designate"
    (future); returns the index after them."""
    n = len(toks)
    for width, qualifier in ((1, "former"), (2, "future"), (1, "future")):
        words = low[i:i + width]
        if len(words) < width or not out.offices:
            continue
        if (qualifier == "former" and words == ["emeritus"]) or (
                qualifier == "future" and words[-1] in _FUTURE and (width == 1 or words[0] == "-")):
            out.offices[-1] = _qualified(out.offices[-1], qualifier)
            out.end = toks[min(n, i + width) - 1][2]
            return i + width
    return i


def _next_person(name: str) -> bool:
    return bool(_NAME_ONLY_LINE.match(name)) and (bool(re.search(rf"(?:^|\s){_UP}\.", name))
                                                   or name.isupper())


def _area(toks, low, i: int, text: str) -> int | None:
    """End (token index) of a name after an office ("Other Corp.", "the Audit Committee",
    "Acme U.S.", "Finance") on the office's line, or None when no capitalised name
    follows."""
    n, k, words = len(toks), i, 0
    if k < n and low[k] == "the":
        k += 1
    while k < n:
        if words and "\n" in text[toks[k - 1][2]:toks[k][1]]:
            break
        t, w = toks[k][0], low[k]
        if _is_cap(t) and w not in ("and", "&") and not re.fullmatch(r"\d+", t):
            if w in ("chief", "president", "chair", "chairman", "chairwoman", "director",
                     "treasurer", "secretary", "executive", "senior", "vice", "ceo", "cfo",
                     "coo") and words:
                break  # the next office: "Finance and Chief Financial Officer"
            words += 1
            k += 1
            if t.endswith(".") and not _ABBREVIATION.match(t):
                break  # a sentence ends
            continue
        if w in ("&", "of", "the", "and", "-", "'s", "’s", ",") and words and k + 1 < n \
                and _is_cap(toks[k + 1][0]) and toks[k + 1][0].lower() not in (
                    "chief", "president", "chair", "chairman", "director", "executive",
                    "senior", "vice", "treasurer", "secretary", "ceo", "cfo", "coo") \
                and (w != "," or _LEGAL.match(", " + toks[k + 1][0])):
            k += 1
            continue
        break
    return k if words else None


def roles_in_title(title: str) -> list[str]:
    """The relations a title states for the organisation it belongs to: "President and Chief
    Executive Officer, Director" -> ceo_of, director_of. "Vice Chairman" is no chair; "Director
    of X" is a manager, not a board member; "former CEO" is no CEO."""
    parsed = parse_title(title)
    offices = _bind_areas(parsed, set())
    if parsed.past:
        return []
    found = {o.relation for o in offices if o.relation and not o.scope}
    return [r for r in _RELATION_ORDER if r in found]


def _bind_areas(parsed: ParsedTitle, forms: set[str], next_line_org: str = "") -> list[Office]:
    """Offices with the organisation or unit each belongs to (its `scope`; "" = the issuer).
    A name after "of"/"at" or on the next line that is a company scopes the whole title (a
    director's job elsewhere: "Chairman and CEO of Other Corp."); a unit after a comma scopes
    the last offices ("President and CEO, <unit>"), and only a trailing rank when a chief
    office comes before it ("Chief Financial Officer and President, <unit>")."""
    offices = list(parsed.offices)
    if not offices:
        return offices

    def scoped(idx: Iterable[int], scope: str) -> None:
        for k in idx:
            o = offices[k]
            offices[k] = Office(o.role, o.text, o.qualifiers, o.scope or scope, o.group)

    areas = list(parsed.areas)
    if next_line_org:
        areas.append((next_line_org, "\n", len(offices) - 1))
    for area, intro, last in areas:
        if last < 0 or _is_issuer(area, forms):
            continue
        if last < len(offices) - 1:
            # "Chairman and CEO, Other Corp. Lead Director": the company's offices end there;
            # "EVP, Finance and Chief Financial Officer": the VP's area
            scoped(range(last + 1) if _LEGAL.search(area) else [last], area)
            continue
        company = intro in ("of", "at", "\n") or bool(_LEGAL.search(area))
        tail = [k for k in range(len(offices)) if offices[k].group == offices[last].group]
        if offices[last].role in _RANKS and any(offices[k].role not in _RANKS
                                                for k in range(last)) and not (
                _LEGAL.search(area)):
            # "... Chief Financial Officer and President, Shared Services"
            k = last
            while k >= 0 and offices[k].role in _RANKS and offices[k].group == offices[last].group:
                scoped([k], area)
                k -= 1
        elif company:
            scoped(range(len(offices)), area)
        else:
            scoped(tail or [last], area)
    return offices


def _is_issuer(area: str, forms: set[str]) -> bool:
    words = re.sub(r"^(?:the)\s+", "", area.strip(), flags=re.IGNORECASE)
    if words.lower().rstrip(".") in _ISSUER_WORDS or re.match(
            r"(?i)^board(?:\s+of\s+directors)?\.?$", words):
        return True
    return bool(forms) and normalise_name(area, "ORG") in forms
