"""What extraction reads and returns (text units, mentions, an extraction), in a module of their
own so that the English rules (extract.py) and the Chinese ones (zh.py) share them without
importing each other."""

from __future__ import annotations

from dataclasses import dataclass, field

from h3.ontology.document import BBox
from h3.ontology.relations import Edge


@dataclass(frozen=True, slots=True)
class TextUnit:
    doc_id: str
    page: int
    bbox: BBox
    text: str


@dataclass(frozen=True, slots=True)
class Mention:
    entity_id: str
    text: str
    type: str
    doc_id: str
    page: int
    bbox: BBox
    sentence: str
    start: int  # character offsets in the sentence
    end: int
    anaphor: bool = False  # "the company" standing for the last named organisation


@dataclass(slots=True)
class Extraction:
    mentions: list[Mention] = field(default_factory=list)
    edges: list[Edge] = field(default_factory=list)
