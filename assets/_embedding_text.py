"""The text a chunk is embedded from, shared by the `embeddings` asset and the multilingual
backfill (its own module so that neither imports the other)."""

from collections.abc import Mapping
from typing import Any

from h3.ontology.records import ChunkRecord


def embedding_text(chunk: ChunkRecord | Mapping[str, Any]) -> str:
    """What the model sees: the section title gives a chunk its context. `chunk`: the chunks
    stage's record, or a stored `chunks` row (the backfills read rows from the store)."""
    if isinstance(chunk, ChunkRecord):
        section, text = chunk.section, chunk.text
    else:
        section, text = chunk.get("section") or "", chunk["text"]
    return text if not section or text.startswith(section) else f"{section}\n{text}"
