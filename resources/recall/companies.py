"""The issuer registry: which stored documents a query's company words point at.

Built from the corpus's own document profiles (resources/nlp/issuer.py): each issuer's legal
name, its short forms, former names and ticker. One company often files under several names
(a rename, "Acme-Mart Stores, Inc." then "Acmemart Inc."): documents whose profiles share a
ticker, or whose former name is another's name, are one company.

A query names a company when one of these forms occurs in it:
- exactly, as whole words, after folding case, accents, apostrophes and hyphens ("acmemart" for
  "Acme-Mart", "omalley" for "O'Malley's");
- by a ticker or initials, in capitals as written ("IBM", never "ibm" or "It");
- by its leading word, when that word is distinctive: capitalised in the query, not a common
  English word, and no other issuer of the corpus starts with it ("Exxon" for "Exxon Mobil
  Corporation");
- fuzzily (rapidfuzz), for a long form typed with a slip ("Lockhead Martin").
Each match has a strength in (0, 1]; routing (resources/recall/documents.py) turns it into a
prior, never a filter.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from rapidfuzz import fuzz

from h3.resources.nlp.issuer import DocumentProfile, short_forms

EXACT, TICKER, LEADING_WORD = 1.0, 0.95, 0.8
FUZZY_MIN_RATIO = 88  # rapidfuzz ratio (0-100) for a typed slip; below it, another word
FUZZY_MIN_CHARS = 6  # shorter forms only match exactly: "Meta" is one letter from "Beta"
# Words that begin many company names and mean nothing alone; a leading word among them
# never names a company by itself ("General" of "General Widgets Corporation").
COMMON_LEADING_WORDS = frozenset(
    "american national international general united first global new north south east west "
    "central southern northern eastern western pacific atlantic standard consolidated royal "
    "federal capital bank trust energy public service services financial digital data health "
    "allied continental universal great the old big best home life power world".split())
_SHOUTED = re.compile(r"[A-Z0-9&.]{1,5}")


def fold(text: str) -> str:
    """Lower case, accents, possessives and apostrophes dropped, every other non-word character
    a space: "O’Malley’s" -> "omalley", "Société Générale" -> "societe generale"."""
    text = unicodedata.normalize("NFKD", text)
    text = "".join(c for c in text if not unicodedata.combining(c))
    text = re.sub(r"['’`]s\b", "", text.lower())  # a possessive, or a name's own "'s"
    text = re.sub(r"['’`]", "", text)
    return " ".join(re.sub(r"[^\w&]+", " ", text).split())


def squash(text: str) -> str:
    """`fold` without spaces: "acme mart" and "acmemart" read the same."""
    return fold(text).replace(" ", "")


@dataclass
class Company:
    """One issuer of the corpus: its documents and every form people use for it."""

    key: str
    doc_ids: list[str] = field(default_factory=list)
    names: list[str] = field(default_factory=list)  # legal and former names, as written
    forms: set[str] = field(default_factory=set)  # folded long forms
    tickers: set[str] = field(default_factory=set)  # capitals, matched as written
    leading: str = ""  # a distinctive first word (folded), or ""

    def absorb(self, other: Company) -> None:
        """Takes in another company found to be this one (a shared ticker or name, a rename)."""
        self.doc_ids += other.doc_ids
        self.names += [n for n in other.names if n not in self.names]
        self.forms |= other.forms
        self.tickers |= other.tickers


@dataclass(frozen=True)
class CompanyMatch:
    company: Company
    strength: float
    form: str  # the words of the query that named it, as written there


def _forms(profile: DocumentProfile) -> tuple[list[str], list[str], set[str]]:
    """(legal and former names, every long form: those names and the short forms, tickers)."""
    names = [n for n in (profile.issuer, *profile.former_names) if n]
    tickers = {a for a in (profile.ticker, *profile.aliases)
               if a and _SHOUTED.fullmatch(a) and not re.fullmatch(r"\d+[A-Z]*", a)}
    longs = [a for a in (*names, *profile.aliases) if a and a not in tickers]
    return names, list(dict.fromkeys(names + longs)), tickers


class IssuerRegistry:
    """The companies of a corpus, built from its documents' profiles (module docstring)."""

    def __init__(self, profiles: Mapping[str, DocumentProfile]) -> None:
        companies: list[Company] = []
        for doc_id, profile in sorted(profiles.items()):
            names, longs, tickers = _forms(profile)
            folded = {fold(f) for f in longs if len(squash(f)) >= 2}
            if not folded and not tickers:
                continue
            same = [c for c in companies if c.tickers & tickers
                    or {squash(f) for f in folded} & {squash(f) for f in c.forms}]
            company = same[0] if same else Company(key=doc_id)
            for other in same[1:]:  # this document links two companies seen apart so far
                company.absorb(other)
                companies.remove(other)
            if not same:
                companies.append(company)
            company.absorb(Company(doc_id, [doc_id], names, folded, tickers))
        self.companies = self._join_renamed(companies)
        self._leading_words(self.companies)

    @staticmethod
    def _join_renamed(companies: list[Company]) -> list[Company]:
        """Joins companies whose name without its legal suffix extends the other's by words
        ("Acme Systems" and "Acme", the same issuer before and after dropping a word, a filing
        of the years before tickers were on covers), when the shorter name's first word is
        distinctive (not a word that begins many names: "General")."""
        def core_words(c: Company) -> list[tuple[str, ...]]:
            return [tuple(fold((short_forms(n) or [n])[0]).split()) for n in c.names if n]

        def extends(a: tuple[str, ...], b: tuple[str, ...]) -> bool:
            short, long_ = (a, b) if len(a) <= len(b) else (b, a)
            return (bool(short) and long_[:len(short)] == short and len(short[0]) >= 4
                    and short[0] not in COMMON_LEADING_WORDS)

        merged = True
        while merged:
            merged = False
            for i, first in enumerate(companies):
                for second in companies[i + 1:]:
                    if any(extends(a, b) for a in core_words(first) for b in core_words(second)):
                        first.absorb(second)
                        companies.remove(second)
                        merged = True
                        break
                if merged:
                    break
        return companies

    @staticmethod
    def _leading_words(companies: list[Company]) -> None:
        firsts: dict[str, set[str]] = {}
        for c in companies:
            for form in c.forms:
                words = form.split()
                if len(words) >= 2:
                    firsts.setdefault(words[0], set()).add(c.key)
        for c in companies:
            for form in sorted(c.forms, key=len):
                words = form.split()
                first = words[0] if len(words) >= 2 else ""
                if (len(first) >= 4 and first.isalpha() and first not in COMMON_LEADING_WORDS
                        and firsts.get(first) == {c.key}):
                    c.leading = first
                    break

    def match(self, query: str) -> list[CompanyMatch]:
        """The companies the query names, strongest first (one match per company)."""
        folded = f" {fold(query)} "
        tokens = folded.split()
        grams = {" ".join(tokens[i:i + n]) for n in range(1, 6)
                 for i in range(len(tokens) - n + 1)}
        squashed = {g.replace(" ", ""): g for g in grams}
        capitalised = {fold(w) for w in re.findall(r"\b[A-Z][\w’'&-]*", query)}
        # words written with a capital or a digit anywhere ("eWidget", "4K", "ACME")
        marked = {squash(w) for w in re.findall(r"[\w’'&-]*[A-Z0-9][\w’'&-]*", query)}
        # the n-grams a fuzzy match may be, by length (a form meets those within 2 characters)
        fuzzy_by_len: dict[int, list[str]] = {}
        for g, words in squashed.items():
            if " " in words or g in marked:
                fuzzy_by_len.setdefault(len(g), []).append(g)
        best: dict[str, CompanyMatch] = {}

        def keep(c: Company, strength: float, form: str) -> None:
            old = best.get(c.key)
            # at equal strength the longer form says more ("Acme Widgets" over "Acme")
            if old is None or (strength, len(form)) > (old.strength, len(old.form)):
                best[c.key] = CompanyMatch(c, strength, form)

        for c in self.companies:
            for t in c.tickers:
                if re.search(r"(?<![\w&])" + re.escape(t) + r"(?![\w&])", query):
                    keep(c, TICKER, t)
            for form in c.forms:
                s = form.replace(" ", "")
                if s in squashed and " " not in squashed[s] and s not in marked:
                    continue  # one word in lower case: "block", "target" are words first
                if f" {form} " in folded:
                    keep(c, EXACT, form)
                elif s in squashed:
                    keep(c, EXACT, squashed[s])
                elif len(s) >= FUZZY_MIN_CHARS:
                    near = [g for size in range(len(s) - 2, len(s) + 3)
                            for g in fuzzy_by_len.get(size, ())]
                    scored = [(fuzz.ratio(s, g), g) for g in near]
                    ratio, g = max(scored, default=(0.0, ""))
                    if ratio >= FUZZY_MIN_RATIO:
                        keep(c, EXACT * ratio / 100 * 0.9, squashed[g])
            if c.leading and c.leading in capitalised and f" {c.leading} " in folded:
                keep(c, LEADING_WORD, c.leading)
        # a name inside a longer matched name is part of it: "General" of "General Widgets"
        found = list(best.values())
        found = [m for m in found if not any(
            o is not m and len(fold(o.form)) > len(fold(m.form))
            and f" {fold(m.form)} " in f" {fold(o.form)} " for o in found)]
        return sorted(found, key=lambda m: (-m.strength, -len(m.form), m.company.key))

    def knows(self, name: str) -> bool:
        """Whether a name a query seems to use is one of the corpus's companies."""
        return bool(self.match(name))


def registry_from(profiles: Mapping[str, DocumentProfile],
                  doc_ids: Iterable[str] | None = None) -> IssuerRegistry:
    """The registry of the given documents' profiles (all of `profiles` when None)."""
    keep = set(doc_ids) if doc_ids is not None else None
    return IssuerRegistry({d: p for d, p in profiles.items() if keep is None or d in keep})
