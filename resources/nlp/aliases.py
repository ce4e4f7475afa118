"""Short names inside one document: "Northwind" after "Northwind Robotics", "Petrova" after
"Elena Petrova" are the same entity. Across documents, identity is the normalised name
(`ontology.entities.entity_id`), so resolving short names to the full name first is what lets
the same company in two documents become one graph node.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from h3.ontology.entities import NAME_TYPES, normalise_name

if TYPE_CHECKING:
    from h3.resources.nlp.extract import Extraction


def alias_map(names: dict[str, str]) -> dict[str, str]:
    """entity_id -> entity_id of the longer name it abbreviates, from {entity_id: name}.

    A name maps to a longer one when its words are the longer name's first words (companies:
    "Northwind" -> "Northwind Robotics") or it is one word equal to the longer name's last word
    (people: "Petrova" -> "Elena Petrova"); only when exactly one longer name fits.
    """
    words = {eid: normalise_name(name).split() for eid, name in names.items()}
    out: dict[str, str] = {}
    for eid, w in words.items():
        if not w:
            continue
        fits = [
            other for other, ow in words.items()
            if other != eid and len(ow) > len(w)
            and (ow[: len(w)] == w or (len(w) == 1 and ow[-1] == w[0]))
        ]
        if len(fits) == 1:
            out[eid] = fits[0]
    return out


def resolve_aliases(extraction: Extraction) -> Extraction:
    """Rewrites mention and edge ids (and texts) of short names to their full name; drops edges
    that would then link an entity to itself. Changes only the given extraction object."""
    names: dict[str, str] = {}
    for m in extraction.mentions:
        if m.type in NAME_TYPES:
            names.setdefault(m.entity_id, m.text)
    mapping = alias_map(names)
    if not mapping:
        return extraction
    full_name = {eid: names[target] for eid, target in mapping.items()}
    extraction.mentions = [
        dataclasses.replace(m, entity_id=mapping[m.entity_id]) if m.entity_id in mapping else m
        for m in extraction.mentions
    ]
    edges = []
    for e in extraction.edges:
        head = mapping.get(e.head_id, e.head_id)
        tail = mapping.get(e.tail_id, e.tail_id)
        if head == tail:
            continue
        edges.append(dataclasses.replace(
            e, head_id=head, tail_id=tail,
            head_text=full_name.get(e.head_id, e.head_text),
            tail_text=full_name.get(e.tail_id, e.tail_text)))
    extraction.edges = edges
    return extraction
