"""The text a chunk is embedded from, shared by the `embeddings` asset and the multilingual
backfill (its own module so that neither imports the other)."""


def embedding_text(chunk: dict) -> str:
    """What the model sees: the section title gives a chunk its context."""
    section, text = chunk.get("section") or "", chunk["text"]
    return text if not section or text.startswith(section) else f"{section}\n{text}"
