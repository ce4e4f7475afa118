"""The document model shared by ingestion, recall and the runtime: plain frozen dataclasses.

Coordinates: `page` is 1-based; `bbox` is (x0, y0, x1, y1) in PDF points on that page, origin
top-left (PyMuPDF's convention).
"""

from __future__ import annotations

from dataclasses import dataclass, field

BBox = tuple[float, float, float, float]


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
    # the other matched chunks of the page, best first, as (box, text): `text` is the best
    # one's only, and an answer may stand in another (a page's second table)
    passages: tuple[tuple[BBox, str], ...] = field(default_factory=tuple)

    def to_json(self) -> dict:
        boxes = self.boxes or (self.bbox,)
        return {
            "doc_id": self.doc_id, "source": self.source, "page": self.page,
            "bbox": [round(float(v), 2) for v in self.bbox], "kind": self.kind, "text": self.text,
            "score": round(float(self.score), 4), "via": self.via, "entities": list(self.entities),
            "boxes": [[round(float(v), 2) for v in b] for b in boxes],
            "passages": [{"bbox": [round(float(v), 2) for v in b], "text": t}
                         for b, t in self.passages],
        }
