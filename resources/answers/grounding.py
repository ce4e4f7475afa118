"""The check a generated answer must pass before a user sees it: every figure and every name it
states appears in the evidence it was given.

A 135M-parameter model writes fluent text that often misstates figures or swaps people; nothing
it writes is presented as a fact unless the evidence holds it. Figures compare by value as
written (commas, currency signs, trailing zeros and a sign or brackets ignored: "$1,577.00" is
"1577"); a figure the model computed (a ratio, a sum) is not in the evidence, so it fails, and
the quoted inputs stand instead. A figure the model gives a scale ("$1,302 billion")
must hold at that scale: the evidence states it so, or bare in a text that declares its unit
("(in millions)"), or the same amount in another scale ("$1.302 billion" for 1,302 millions);
a small model often puts a table's figure in the wrong unit. Names are capitalised words (one that opens a sentence too,
unless it is a common opener such as "The" or "Based"); each must occur, case aside, in the
evidence or the question (the question's own names are the user's words, not a claim).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from decimal import Decimal

_NUMBER = re.compile(r"(?<![\w.])\(?[-+]?[$€£]?\d[\d,]*(?:\.\d+)?\)?%?")
_LIST_MARKER = re.compile(r"(?m)^\s*\d{1,2}[.)]\s")
_WORD = re.compile(r"[A-Za-z][A-Za-z&'-]*")
_SENTENCE_START = re.compile(r"(?:^|[.!?:]\s+|\n\s*)$")
# Words a sentence often opens with that name nothing. Any other capitalised word opening a
# sentence is checked like a name: the model's answer is one sentence, so its first word - often
# the company ("Globex paid dividends of 3,193.") - went unchecked and a company absent from
# the evidence and the question could be shown.
_OPENERS = frozenset(
    "the a an and but so yes no not based according to in on at by for from with as of it its "
    "this that these those there their they we our us you your if when while during after "
    "before since although however also approximately about around nearly almost roughly "
    "over under here what which who how why where answer total net".split())


def figure_value(text: str) -> str | None:
    """'$1,577.00' -> '1577', '(2.50)%' -> '2.5', '2023' -> '2023'; None for no digits."""
    digits = re.sub(r"[^\d.]", "", text).strip(".")
    if not digits or not any(c.isdigit() for c in digits):
        return None
    if "." in digits:
        whole, _, frac = digits.partition(".")
        frac = frac.rstrip("0")
        digits = f"{whole}.{frac}" if frac else whole
    return digits.lstrip("0") or "0"


def figures(text: str) -> list[str]:
    """The figures a text states (list markers like '1.' at a line's start are not figures)."""
    return [value for value, _ in scaled_figures(text)]


_SCALES = {"thousand": 10**3, "million": 10**6, "billion": 10**9, "trillion": 10**12}
_SCALE_AFTER = re.compile(r"\s*(thousand|million|billion|trillion)s?\b", re.I)
# a text's declared unit: "(in millions)", "($ in millions)", "(Millions)", "in thousands"
_DECLARED = re.compile(r"\bin\s+(thousands|millions|billions)\b|"
                       r"\(\s*(?:[$€£]\s*)?(?:in\s+)?(thousands|millions|billions)\b", re.I)


def scaled_figures(text: str) -> list[tuple[str, int | None]]:
    """`figures` with the scale word each is written with ("$3.7 billion" -> ("3.7", 10**9);
    None for none)."""
    text = _LIST_MARKER.sub(" ", text)
    out = []
    for m in _NUMBER.finditer(text):
        value = figure_value(m.group(0))
        if value is not None:
            scale = _SCALE_AFTER.match(text, m.end()) if not m.group(0).endswith("%") else None
            out.append((value, _SCALES[scale.group(1).lower()] if scale else None))
    return out


def _amounts(text: str) -> set[Decimal]:
    """The amounts a text states at a scale: written with one, or bare under the unit the text
    declares."""
    declared = {_SCALES[(m.group(1) or m.group(2)).lower()[:-1]] for m in _DECLARED.finditer(text)}
    out = set()
    for value, scale in scaled_figures(text):
        for s in ({scale} if scale else declared):
            out.add(Decimal(value) * s)
    return out


def names(text: str) -> list[str]:
    """Capitalised words that do not open a sentence: the names a text states."""
    out = []
    for m in _WORD.finditer(text):
        word = m.group(0)
        if word[0].isupper() and not _SENTENCE_START.search(text[:m.start()]):
            out.append(word)
    return out


def _bare(word: str) -> str:
    """A word as names compare: lower case, a possessive dropped ("Acme's" is "acme")."""
    return re.sub(r"'s$", "", word.lower())


def opening_names(text: str) -> list[str]:
    """Capitalised words that open a sentence and are not common openers (_OPENERS): names the
    position alone capitalises nothing about, so they are checked too."""
    return [m.group(0) for m in _WORD.finditer(text)
            if m.group(0)[0].isupper() and m.group(0).lower() not in _OPENERS
            and _SENTENCE_START.search(text[:m.start()])]


@dataclass(slots=True)
class Grounding:
    grounded: bool
    unsupported_figures: list[str] = field(default_factory=list)
    unsupported_names: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        return {"grounded": self.grounded, "unsupported_figures": self.unsupported_figures,
                "unsupported_names": self.unsupported_names}


def check(generated: str, evidence_texts: list[str], question: str = "") -> Grounding:
    """Whether every figure and name of `generated` appears in the evidence (names: or in the
    question). An empty text is not grounded (it says nothing), nor one that ends announcing an
    answer it never gives ("The answer is:", "The guidance for Q3 2023 is:": the model's first
    statement stopped at its colon)."""
    if not generated.strip() or generated.rstrip().endswith(":"):
        return Grounding(False)
    evidence = "\n".join(evidence_texts)
    known_figures = set(figures(evidence))
    known_amounts = set().union(*map(_amounts, evidence_texts)) if evidence_texts else set()
    known_words = {_bare(w) for w in _WORD.findall(evidence + "\n" + question)}
    bad_figures = list(dict.fromkeys(
        f for f, scale in scaled_figures(generated)
        if (Decimal(f) * scale not in known_amounts if scale else f not in known_figures)))
    stated = opening_names(generated) + names(generated)
    bad_names = list(dict.fromkeys(n for n in stated if _bare(n) not in known_words))
    return Grounding(not bad_figures and not bad_names, bad_figures, bad_names)
