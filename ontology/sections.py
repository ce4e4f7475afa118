"""A document read as a tree (H⁴ navigation): document -> sections -> parts -> passages.

A `Section` is one node: a top-level section (level 1: "Item 7", "Note 12", a PDF outline
entry) or one of its parts (level 2: a run of consecutive chunks of at most a few thousand
tokens, cut at page breaks where it can). Parts are what a question loads; a top section holds
its parts' pages. Chunk ids are the stored chunks' (`<doc_id>:c<i>`), in reading order.
"""

from __future__ import annotations

from dataclasses import dataclass, field

# where a tree's top-level sections came from
ORIGINS = ("outline", "headings", "pages")


@dataclass(frozen=True, slots=True)
class Section:
    doc_id: str
    section_id: str  # "s3" (top level) or "s3.2" (its second part)
    level: int  # 1: a section, 2: one of its parts
    title: str
    page_start: int  # 1-based, inclusive
    page_end: int
    parent_id: str = ""  # "" for a top-level section
    chunk_ids: tuple[str, ...] = ()
    tokens: int = 0  # the chunks' token counts summed
    origin: str = "headings"  # ORIGINS
    summary: str = ""  # extractive: key sentences, table titles and line items, with pages
    vector: tuple[float, ...] = field(default=(), repr=False)  # unit centroid of its chunks

    def __post_init__(self) -> None:
        if self.level not in (1, 2):
            raise ValueError(f"section {self.section_id}: level {self.level} (1 or 2)")
        if self.page_end < self.page_start:
            raise ValueError(f"section {self.section_id}: pages {self.page_start}-{self.page_end}")
        if self.origin not in ORIGINS:
            raise ValueError(f"section {self.section_id}: origin {self.origin!r} not in {ORIGINS}")

    @property
    def pages(self) -> str:
        return (f"{self.page_start}" if self.page_start == self.page_end
                else f"{self.page_start}-{self.page_end}")

    def holds_page(self, page: int) -> bool:
        return self.page_start <= page <= self.page_end

    def to_json(self, with_vector: bool = False) -> dict:
        out = {"section_id": self.section_id, "level": self.level, "title": self.title,
               "page_start": self.page_start, "page_end": self.page_end,
               "parent_id": self.parent_id, "chunks": len(self.chunk_ids), "tokens": self.tokens,
               "origin": self.origin, "summary": self.summary}
        if with_vector:
            out["vector"] = list(self.vector)
        return out
