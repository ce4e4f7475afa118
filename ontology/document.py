"""The document model shared by ingestion, recall and the runtime: plain frozen dataclasses.

Coordinates: `page` is 1-based; `bbox` is (x0, y0, x1, y1) in PDF points on that page, origin
top-left (PyMuPDF's convention).
"""

from __future__ import annotations

from dataclasses import dataclass, field

# What a layout region can be. "ocr_text" is text recovered by OCR from a page with no text layer.
REGION_KINDS: tuple[str, ...] = (
    "title", "text", "table", "figure", "caption", "formula", "list", "header", "footer",
    "ocr_text", "code",
)
# Regions that structural recall returns as themselves (bbox = the region).
STRUCTURAL_KINDS: tuple[str, ...] = ("table", "figure", "formula")

BBox = tuple[float, float, float, float]


@dataclass(frozen=True, slots=True)
class Region:
    doc_id: str
    region_id: str  # stable within a document version: f"{doc_id}:p{page}:r{index}"
    page: int
    kind: str
    bbox: BBox
    text: str
    order: int  # reading order on the page

    def __post_init__(self) -> None:
        if self.kind not in REGION_KINDS:
            raise ValueError(f"unknown region kind {self.kind!r}; allowed: {REGION_KINDS}")
        if self.page < 1:
            raise ValueError(f"page is 1-based, got {self.page}")


@dataclass(frozen=True, slots=True)
class Chunk:
    doc_id: str
    chunk_id: str
    page: int  # the page where the chunk starts
    bbox: BBox  # union of its regions' boxes on that page
    text: str
    section: str  # the heading it falls under ("" before the first heading)
    kind: str  # the dominant region kind
    token_count: int
    region_ids: tuple[str, ...] = field(default_factory=tuple)


@dataclass(frozen=True, slots=True)
class Hit:
    """One recall result, as `h3 recall --json` prints it."""

    doc_id: str
    source: str
    page: int
    bbox: BBox
    kind: str
    text: str
    score: float
    via: str  # text | structure | relation
    entities: tuple[dict, ...] = field(default_factory=tuple)
    # every box of the page that matched (hits of one page merge into one: issue 11); the
    # first is `bbox`. Empty = just `bbox`.
    boxes: tuple[BBox, ...] = field(default_factory=tuple)

    def to_json(self) -> dict:
        boxes = self.boxes or (self.bbox,)
        return {
            "doc_id": self.doc_id, "source": self.source, "page": self.page,
            "bbox": [round(float(v), 2) for v in self.bbox], "kind": self.kind, "text": self.text,
            "score": round(float(self.score), 4), "via": self.via, "entities": list(self.entities),
            "boxes": [[round(float(v), 2) for v in b] for b in boxes],
        }
