"""What the per-document ingestion stages pass each other, as typed records.

Each stage's payload is staged as JSON (resources/staging_io.py, doc_id -> payload). These records
are that JSON read into types: `from_json` and `to_json` round-trip the staged format exactly
(same keys, same values; `to_json(from_json(x)) == x`), so staged files and stores written before
the records existed read back unchanged. Sequences are tuples here and lists in JSON.

A stage payload is either its record (status "ok") or a `StageFailure`; `stage_seconds` and
`stage_cpu_seconds` are added by the stage runner (assets/_batch.py) after the stage returns, so
they are optional and written only when set. Coordinates as in ontology/document.py.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

Json = dict[str, Any]
Box = tuple[float, ...]  # (x0, y0, x1, y1), values kept as staged (int or float)

R = TypeVar("R", bound="Record")


class Record(Protocol):
    def to_json(self) -> Json: ...


def _box(values) -> Box:
    return tuple(values)


def _timed(out: Json, stage_seconds: float | None, stage_cpu_seconds: float | None) -> Json:
    if stage_seconds is not None:
        out["stage_seconds"] = stage_seconds
    if stage_cpu_seconds is not None:
        out["stage_cpu_seconds"] = stage_cpu_seconds
    return out


def _extra(d: Json, known: frozenset[str]) -> Json:
    """Keys this version does not model (a staged file of another version): kept, so the file
    reads back unchanged."""
    return {k: v for k, v in d.items() if k not in known}


_TAIL = frozenset({"status", "stage_seconds", "stage_cpu_seconds"})


@dataclass(frozen=True, slots=True, kw_only=True)
class StageFailure:
    """A document that failed in this stage or upstream of it: why, and which file."""

    reason: str | None
    source: str | None
    status: str = "failed"
    stage_seconds: float | None = None
    stage_cpu_seconds: float | None = None
    extra: Json = field(default_factory=dict)

    _KNOWN = frozenset({"reason", "source"}) | _TAIL

    def to_json(self) -> Json:
        out = {"status": self.status, "reason": self.reason, "source": self.source}
        return {**_timed(out, self.stage_seconds, self.stage_cpu_seconds), **self.extra}

    @classmethod
    def from_json(cls, d: Json) -> StageFailure:
        return cls(reason=d.get("reason"), source=d.get("source"), status=d["status"],
                   stage_seconds=d.get("stage_seconds"),
                   stage_cpu_seconds=d.get("stage_cpu_seconds"),
                   extra=_extra(d, cls._KNOWN))


def read_payload(d: Json, record: type[R]) -> R | StageFailure:
    """A staged payload as `record` when its status is "ok", else as a StageFailure."""
    return record.from_json(d) if d.get("status") == "ok" else StageFailure.from_json(d)


# -- stage 1: documents ------------------------------------------------------------------------

@dataclass(frozen=True, slots=True, kw_only=True)
class DocumentRecord:
    """One checked PDF (assets/documents.py). `source` is what later stages open: the file, or
    its rebuild by a second reader; `profile` is resources/nlp/issuer.py's profile JSON."""

    source: str
    pages: int
    title: str
    metadata: Json
    content_hash: str
    bytes: int
    text_pages: tuple[bool, ...]
    page_sizes: tuple[tuple[float, float], ...]
    repaired: bool
    garbled_pages: tuple[int, ...] = ()
    warnings: tuple[str, ...] = ()
    profile: Json | None = None
    status: str = "ok"
    reason: str | None = None
    stage_seconds: float | None = None
    stage_cpu_seconds: float | None = None
    extra: Json = field(default_factory=dict)

    _KNOWN = frozenset({"reason", "source", "pages", "title", "metadata", "content_hash",
                        "bytes", "text_pages", "page_sizes", "repaired", "garbled_pages",
                        "warnings", "profile"}) | _TAIL

    def to_json(self) -> Json:
        out = {"status": self.status, "reason": self.reason, "source": self.source,
               "pages": self.pages, "title": self.title, "metadata": self.metadata,
               "content_hash": self.content_hash, "bytes": self.bytes,
               "text_pages": list(self.text_pages),
               "page_sizes": [list(s) for s in self.page_sizes], "repaired": self.repaired,
               "garbled_pages": list(self.garbled_pages), "warnings": list(self.warnings),
               "profile": self.profile}
        return {**_timed(out, self.stage_seconds, self.stage_cpu_seconds), **self.extra}

    @classmethod
    def from_json(cls, d: Json) -> DocumentRecord:
        return cls(source=d["source"], pages=d["pages"], title=d["title"],
                   metadata=d["metadata"], content_hash=d["content_hash"], bytes=d["bytes"],
                   text_pages=tuple(d["text_pages"]),
                   page_sizes=tuple(tuple(s) for s in d["page_sizes"]),
                   repaired=d["repaired"], garbled_pages=tuple(d.get("garbled_pages") or ()),
                   warnings=tuple(d["warnings"]), profile=d.get("profile"), status=d["status"],
                   reason=d["reason"], stage_seconds=d.get("stage_seconds"),
                   stage_cpu_seconds=d.get("stage_cpu_seconds"), extra=_extra(d, cls._KNOWN))


# -- stage 2: layout ---------------------------------------------------------------------------

_BLOCK_FEATURES = ("text", "id", "type", "parent", "next", "score")  # layoutparser's order


@dataclass(frozen=True, slots=True, kw_only=True)
class LayoutBlock:
    """A layoutparser TextBlock as its `to_dict()` writes it: a rectangle, and only the
    features that are set (None is never written)."""

    x_1: float
    y_1: float
    x_2: float
    y_2: float
    block_type: str = "rectangle"
    text: str | None = None
    id: int | None = None
    type: str | None = None
    parent: int | None = None
    next: int | None = None
    score: float | None = None

    @property
    def bbox(self) -> Box:
        return (self.x_1, self.y_1, self.x_2, self.y_2)

    def to_json(self) -> Json:
        out: Json = {"x_1": self.x_1, "y_1": self.y_1, "x_2": self.x_2, "y_2": self.y_2,
                     "block_type": self.block_type}
        for name in _BLOCK_FEATURES:
            if getattr(self, name) is not None:
                out[name] = getattr(self, name)
        return out

    @classmethod
    def from_json(cls, d: Json) -> LayoutBlock:
        return cls(x_1=d["x_1"], y_1=d["y_1"], x_2=d["x_2"], y_2=d["y_2"],
                   block_type=d["block_type"], **{n: d.get(n) for n in _BLOCK_FEATURES})


def _layout_json(blocks: tuple[LayoutBlock, ...]) -> Json:
    # layoutparser's Layout.to_dict(); the layout stage never sets page_data
    return {"page_data": {}, "blocks": [b.to_json() for b in blocks]}


@dataclass(frozen=True, slots=True, kw_only=True)
class PageLayout:
    """One page's layout: text blocks typed by kind (`type`), the layout model's raw boxes
    (`detections`), large images' boxes; `model`: whether the model looked at the page."""

    page: int
    width: float
    height: float
    rotation: int
    blocks: tuple[LayoutBlock, ...]
    detections: tuple[LayoutBlock, ...] = ()
    images: tuple[Box, ...] = ()
    model: bool = False

    def boxes_of(self, kind: str) -> list[list[float]]:
        """The model's boxes of one kind ("table", "figure")."""
        return [list(d.bbox) for d in self.detections if d.type == kind]

    def to_json(self) -> Json:
        return {"page": self.page, "width": self.width, "height": self.height,
                "rotation": self.rotation, "blocks": _layout_json(self.blocks),
                "detections": _layout_json(self.detections),
                "images": [list(b) for b in self.images], "model": self.model}

    @classmethod
    def from_json(cls, d: Json) -> PageLayout:
        return cls(page=d["page"], width=d["width"], height=d["height"],
                   rotation=d["rotation"],
                   blocks=tuple(LayoutBlock.from_json(b) for b in d["blocks"]["blocks"]),
                   detections=tuple(LayoutBlock.from_json(b)
                                    for b in d["detections"]["blocks"]),
                   images=tuple(_box(b) for b in d["images"]),
                   model=d.get("model", False))  # older files: no key


@dataclass(frozen=True, slots=True, kw_only=True)
class LayoutRecord:
    source: str
    pages: int
    layout: tuple[PageLayout, ...]
    status: str = "ok"
    stage_seconds: float | None = None
    stage_cpu_seconds: float | None = None
    extra: Json = field(default_factory=dict)

    _KNOWN = frozenset({"source", "pages", "layout"}) | _TAIL

    def to_json(self) -> Json:
        out = {"source": self.source, "pages": self.pages,
               "layout": [p.to_json() for p in self.layout], "status": self.status}
        return {**_timed(out, self.stage_seconds, self.stage_cpu_seconds), **self.extra}

    @classmethod
    def from_json(cls, d: Json) -> LayoutRecord:
        return cls(source=d["source"], pages=d["pages"],
                   layout=tuple(PageLayout.from_json(p) for p in d["layout"]),
                   status=d["status"], stage_seconds=d.get("stage_seconds"),
                   stage_cpu_seconds=d.get("stage_cpu_seconds"), extra=_extra(d, cls._KNOWN))


# -- stage 3: tables ---------------------------------------------------------------------------

@dataclass(frozen=True, slots=True, kw_only=True)
class TableRecord:
    """One table: its cells' text by row, the same as markdown, and which search found it
    ("find_tables", "layout-model", "text-alignment")."""

    page: int
    bbox: Box
    rows: tuple[tuple[str, ...], ...]
    markdown: str
    origin: str

    def to_json(self) -> Json:
        return {"page": self.page, "bbox": list(self.bbox), "rows": [list(r) for r in self.rows],
                "markdown": self.markdown, "origin": self.origin}

    @classmethod
    def from_json(cls, d: Json) -> TableRecord:
        return cls(page=d["page"], bbox=_box(d["bbox"]), rows=tuple(tuple(r) for r in d["rows"]),
                   markdown=d["markdown"], origin=d["origin"])


@dataclass(frozen=True, slots=True, kw_only=True)
class TablesRecord:
    source: str
    tables: tuple[TableRecord, ...]
    status: str = "ok"
    stage_seconds: float | None = None
    stage_cpu_seconds: float | None = None
    extra: Json = field(default_factory=dict)

    _KNOWN = frozenset({"source", "tables"}) | _TAIL

    def to_json(self) -> Json:
        out = {"source": self.source, "tables": [t.to_json() for t in self.tables],
               "status": self.status}
        return {**_timed(out, self.stage_seconds, self.stage_cpu_seconds), **self.extra}

    @classmethod
    def from_json(cls, d: Json) -> TablesRecord:
        return cls(source=d["source"], tables=tuple(TableRecord.from_json(t) for t in d["tables"]),
                   status=d["status"], stage_seconds=d.get("stage_seconds"),
                   stage_cpu_seconds=d.get("stage_cpu_seconds"), extra=_extra(d, cls._KNOWN))


# -- stage 4: figures --------------------------------------------------------------------------

@dataclass(frozen=True, slots=True, kw_only=True)
class FigureRecord:
    """One figure crop (PNG at `image_path`), its caption and the text drawn inside it."""

    page: int
    bbox: Box
    image_path: str
    caption: str
    origin: str  # "layout-model" | "pymupdf"
    text: str

    def to_json(self) -> Json:
        return {"page": self.page, "bbox": list(self.bbox), "image_path": self.image_path,
                "caption": self.caption, "origin": self.origin, "text": self.text}

    @classmethod
    def from_json(cls, d: Json) -> FigureRecord:
        return cls(page=d["page"], bbox=_box(d["bbox"]), image_path=d["image_path"],
                   caption=d["caption"], origin=d.get("origin", "layout-model"),
                   text=d["text"])  # (older files: no origin)


@dataclass(frozen=True, slots=True, kw_only=True)
class FiguresRecord:
    source: str
    figures: tuple[FigureRecord, ...]
    status: str = "ok"
    stage_seconds: float | None = None
    stage_cpu_seconds: float | None = None
    extra: Json = field(default_factory=dict)

    _KNOWN = frozenset({"source", "figures"}) | _TAIL

    def to_json(self) -> Json:
        out = {"source": self.source, "figures": [f.to_json() for f in self.figures],
               "status": self.status}
        return {**_timed(out, self.stage_seconds, self.stage_cpu_seconds), **self.extra}

    @classmethod
    def from_json(cls, d: Json) -> FiguresRecord:
        return cls(source=d["source"],
                   figures=tuple(FigureRecord.from_json(f) for f in d["figures"]),
                   status=d["status"], stage_seconds=d.get("stage_seconds"),
                   stage_cpu_seconds=d.get("stage_cpu_seconds"), extra=_extra(d, cls._KNOWN))


# -- stage 5: OCR ------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True, kw_only=True)
class OcrParagraph:
    bbox: Box
    text: str
    score: float  # tesseract's mean word confidence, 0-100

    def to_json(self) -> Json:
        return {"bbox": list(self.bbox), "text": self.text, "score": self.score}

    @classmethod
    def from_json(cls, d: Json) -> OcrParagraph:
        return cls(bbox=_box(d["bbox"]), text=d["text"], score=d["score"])


@dataclass(frozen=True, slots=True, kw_only=True)
class OcrPage:
    page: int
    paragraphs: tuple[OcrParagraph, ...]
    languages: str | None  # the tesseract languages the page was read with

    def to_json(self) -> Json:
        return {"page": self.page, "paragraphs": [p.to_json() for p in self.paragraphs],
                "languages": self.languages}

    @classmethod
    def from_json(cls, d: Json) -> OcrPage:
        return cls(page=d["page"],
                   paragraphs=tuple(OcrParagraph.from_json(p) for p in d["paragraphs"]),
                   languages=d["languages"])


@dataclass(frozen=True, slots=True, kw_only=True)
class OcrRecord:
    """Pages read by OCR; `skipped_pages`: pages without a text layer left unread (OCR off);
    `errors`: pages OCR failed on (None when OCR did not run: the key is not written)."""

    source: str
    ocr_pages: tuple[OcrPage, ...] = ()
    skipped_pages: tuple[int, ...] = ()
    errors: tuple[str, ...] | None = None
    status: str = "ok"
    stage_seconds: float | None = None
    stage_cpu_seconds: float | None = None
    extra: Json = field(default_factory=dict)

    _KNOWN = frozenset({"source", "ocr_pages", "skipped_pages", "errors"}) | _TAIL

    def to_json(self) -> Json:
        out: Json = {"source": self.source, "ocr_pages": [p.to_json() for p in self.ocr_pages],
                     "skipped_pages": list(self.skipped_pages)}
        if self.errors is not None:
            out["errors"] = list(self.errors)
        out["status"] = self.status
        return {**_timed(out, self.stage_seconds, self.stage_cpu_seconds), **self.extra}

    @classmethod
    def from_json(cls, d: Json) -> OcrRecord:
        errors = d.get("errors")
        return cls(source=d["source"], ocr_pages=tuple(OcrPage.from_json(p) for p in d["ocr_pages"]),
                   skipped_pages=tuple(d["skipped_pages"]),
                   errors=None if errors is None else tuple(errors), status=d["status"],
                   stage_seconds=d.get("stage_seconds"),
                   stage_cpu_seconds=d.get("stage_cpu_seconds"), extra=_extra(d, cls._KNOWN))


# -- stage 6: regions and chunks ---------------------------------------------------------------

@dataclass(frozen=True, slots=True, kw_only=True)
class RegionRecord:
    """One region of a page in reading order (`order`), a row of the store's `regions` table:
    a layout block, a table (text: its markdown), a figure (text: caption) or OCR paragraph.
    `extra_json`: a table's rows / a figure's caption and inner text, as a JSON string."""

    doc_id: str
    region_id: str
    page: int
    kind: str
    bbox: Box
    text: str
    order: int
    origin: str
    image_path: str | None = None
    extra_json: str | None = None

    def to_json(self) -> Json:
        return {"doc_id": self.doc_id, "region_id": self.region_id, "page": self.page,
                "kind": self.kind, "bbox": list(self.bbox), "text": self.text,
                "order": self.order, "origin": self.origin, "image_path": self.image_path,
                "extra_json": self.extra_json}

    @classmethod
    def from_json(cls, d: Json) -> RegionRecord:
        return cls(doc_id=d["doc_id"], region_id=d["region_id"], page=d["page"], kind=d["kind"],
                   bbox=_box(d["bbox"]), text=d["text"], order=d["order"], origin=d["origin"],
                   image_path=d["image_path"], extra_json=d["extra_json"])


@dataclass(frozen=True, slots=True, kw_only=True)
class ChunkRecord:
    """One chunk: never crosses a page, so `page` and `bbox` (union of its regions') are exact."""

    doc_id: str
    chunk_id: str
    page: int
    bbox: Box
    text: str
    section: str
    kind: str
    token_count: int
    region_ids: tuple[str, ...]

    def to_json(self) -> Json:
        return {"doc_id": self.doc_id, "chunk_id": self.chunk_id, "page": self.page,
                "bbox": list(self.bbox), "text": self.text, "section": self.section,
                "kind": self.kind, "token_count": self.token_count,
                "region_ids": list(self.region_ids)}

    @classmethod
    def from_json(cls, d: Json) -> ChunkRecord:
        return cls(doc_id=d["doc_id"], chunk_id=d["chunk_id"], page=d["page"],
                   bbox=_box(d["bbox"]), text=d["text"], section=d["section"], kind=d["kind"],
                   token_count=d["token_count"], region_ids=tuple(d["region_ids"]))


@dataclass(frozen=True, slots=True, kw_only=True)
class ChunksRecord:
    """The chunks stage's payload; `warnings`: what a user should know about the document."""

    source: str
    regions: tuple[RegionRecord, ...]
    chunks: tuple[ChunkRecord, ...]
    warnings: tuple[str, ...] = ()
    status: str = "ok"
    stage_seconds: float | None = None
    stage_cpu_seconds: float | None = None
    extra: Json = field(default_factory=dict)

    _KNOWN = frozenset({"source", "regions", "chunks", "warnings"}) | _TAIL

    def to_json(self) -> Json:
        out = {"source": self.source, "regions": [r.to_json() for r in self.regions],
               "chunks": [c.to_json() for c in self.chunks], "warnings": list(self.warnings),
               "status": self.status}
        return {**_timed(out, self.stage_seconds, self.stage_cpu_seconds), **self.extra}

    @classmethod
    def from_json(cls, d: Json) -> ChunksRecord:
        return cls(source=d["source"],
                   regions=tuple(RegionRecord.from_json(r) for r in d["regions"]),
                   chunks=tuple(ChunkRecord.from_json(c) for c in d["chunks"]),
                   warnings=tuple(d["warnings"]), status=d["status"],
                   stage_seconds=d.get("stage_seconds"),
                   stage_cpu_seconds=d.get("stage_cpu_seconds"), extra=_extra(d, cls._KNOWN))


# -- stage 7: embeddings -----------------------------------------------------------------------

@dataclass(frozen=True, slots=True, kw_only=True)
class EmbeddingsRecord:
    """The embeddings stage's payload: one 384-d SBERT vector per chunk, in the chunks' order;
    `vectors_ml`: {chunk index: multilingual-e5 vector} for the non-English chunks (the index is
    a string after a JSON round trip, as staged), omitted when there are none."""

    source: str | None
    vectors: tuple[tuple[float, ...], ...]
    vectors_ml: Json | None = None
    status: str = "ok"
    stage_seconds: float | None = None
    stage_cpu_seconds: float | None = None
    extra: Json = field(default_factory=dict)

    _KNOWN = frozenset({"source", "vectors", "vectors_ml"}) | _TAIL

    def to_json(self) -> Json:
        out = {"status": self.status, "source": self.source,
               "vectors": [list(v) for v in self.vectors]}
        if self.vectors_ml:
            out["vectors_ml"] = self.vectors_ml
        return {**_timed(out, self.stage_seconds, self.stage_cpu_seconds), **self.extra}

    @classmethod
    def from_json(cls, d: Json) -> EmbeddingsRecord:
        return cls(source=d.get("source"), vectors=tuple(tuple(v) for v in d["vectors"]),
                   vectors_ml=d.get("vectors_ml"), status=d["status"],
                   stage_seconds=d.get("stage_seconds"),
                   stage_cpu_seconds=d.get("stage_cpu_seconds"), extra=_extra(d, cls._KNOWN))


# -- stage 8: the document store ---------------------------------------------------------------

@dataclass(frozen=True, slots=True, kw_only=True)
class StoredRecord:
    """What the store stage wrote for one document: its row counts per table, and the ids of
    older versions of the same file it deleted (`replaced`). The later stages (knowledge graph,
    structures, figure vectors, token vectors) read only its status and source."""

    source: str | None
    pages: int | None
    regions: int
    chunks: int
    chunks_ml: int | None = None
    replaced: tuple[str, ...] = ()
    status: str = "ok"
    stage_seconds: float | None = None
    stage_cpu_seconds: float | None = None
    extra: Json = field(default_factory=dict)

    _KNOWN = frozenset({"source", "pages", "regions", "chunks", "chunks_ml",
                        "replaced"}) | _TAIL

    def counts(self) -> Json:
        """{table: rows written}, as the document's `metadata_json` keeps them."""
        out = {"regions": self.regions, "chunks": self.chunks}
        if self.chunks_ml is not None:
            out["chunks_ml"] = self.chunks_ml
        return out

    def to_json(self) -> Json:
        out = {"status": self.status, "source": self.source, "pages": self.pages,
               **self.counts(), "replaced": list(self.replaced)}
        return {**_timed(out, self.stage_seconds, self.stage_cpu_seconds), **self.extra}

    @classmethod
    def from_json(cls, d: Json) -> StoredRecord:
        return cls(source=d.get("source"), pages=d.get("pages"), regions=d["regions"],
                   chunks=d["chunks"], chunks_ml=d.get("chunks_ml"),
                   replaced=tuple(d.get("replaced") or ()), status=d["status"],
                   stage_seconds=d.get("stage_seconds"),
                   stage_cpu_seconds=d.get("stage_cpu_seconds"), extra=_extra(d, cls._KNOWN))
