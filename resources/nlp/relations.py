"""Relation extraction by sentence patterns over masked sentences.

Each entity mention in a sentence is replaced by a tag "⟨E<i>⟩" (i = its index in the
sentence's mention list); the ontology's patterns (`RelationType.patterns`, with `{H}` = head and
`{T}` = tail) are then matched case-insensitively at every position (zero-width lookahead, so
overlapping facts in one sentence are all found). A tail followed by "and X" / ", X" / "and to X"
extends to X as well ("supplies chips to A and to B" -> two edges). Masking keeps the patterns
readable and stops a gap from silently crossing another entity.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from h3.ontology.entities import NAME_TYPES
from h3.ontology.relations import RELATION_TYPES

TAG_RE = re.compile(r"⟨E(\d+)⟩")
_CONJ_RE = re.compile(r"^(?:\s*,\s*(?:and\s+)?|\s+and\s+|\s+or\s+)(?:to\s+|with\s+|of\s+)?⟨E(\d+)⟩")


@dataclass(frozen=True, slots=True)
class RelationMatch:
    head: int  # index into the sentence's mentions
    tail: int
    relation: str
    rule: str  # "<relation>#<pattern index>"


@functools.lru_cache(maxsize=1)
def compiled_patterns() -> list[tuple[str, int, re.Pattern]]:
    out = []
    for rel in RELATION_TYPES:
        for i, pattern in enumerate(rel.patterns):
            body = pattern.replace("{H}", r"(?P<h>⟨E\d+⟩)").replace("{T}", r"(?P<t>⟨E\d+⟩)")
            out.append((rel.name, i, re.compile(r"(?=" + body + r")", re.IGNORECASE)))
    return out


def mask(sentence: str, spans: list[tuple[int, int]]) -> str:
    """The sentence with each (start, end) character span replaced by its tag (spans sorted,
    non-overlapping, relative to the sentence)."""
    parts, pos = [], 0
    for i, (start, end) in enumerate(spans):
        parts.append(sentence[pos:start])
        parts.append(f"⟨E{i}⟩")
        pos = end
    parts.append(sentence[pos:])
    return "".join(parts)


def _fits(mention_type: str, expected: tuple[str, ...]) -> bool:
    """Names only (never MONEY/DATE); the small NER model mixes up ORG and PERSON often, so
    those are accepted for each other, but a place (GPE) is never taken for a company/person."""
    if mention_type not in NAME_TYPES:
        return False
    return mention_type in expected or mention_type != "GPE"


def find_relations(masked: str, types: list[str]) -> list[RelationMatch]:
    """Every (head, relation, tail) the patterns find in a masked sentence.

    Guarantees: head and tail are distinct mentions whose types are names (ORG, PERSON, GPE...;
    never MONEY or DATE) compatible with the relation; each (head, relation, tail) appears once.
    """
    found: dict[tuple[int, str, int], RelationMatch] = {}
    heads = {r.name: r.head_types for r in RELATION_TYPES}
    tails_ok = {r.name: r.tail_types for r in RELATION_TYPES}
    for relation, index, regex in compiled_patterns():
        for m in regex.finditer(masked):
            head = int(TAG_RE.match(m.group("h")).group(1))
            tails = [int(TAG_RE.match(m.group("t")).group(1))]
            rest = masked[m.end("t"):]
            while (conj := _CONJ_RE.match(rest)) is not None:
                tails.append(int(conj.group(1)))
                rest = rest[conj.end():]
            for tail in tails:
                if head == tail or not (_fits(types[head], heads[relation])
                                        and _fits(types[tail], tails_ok[relation])):
                    continue
                key = (head, relation, tail)
                found.setdefault(key, RelationMatch(head, tail, relation, f"{relation}#{index}"))
    return list(found.values())
