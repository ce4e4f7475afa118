"""Cold-store tables written by the semantic stages (registered with the store at import)."""

from __future__ import annotations

import pyarrow as pa

from resources.store.tables import BBOX, EMBEDDING_DIM, TableSpec, register_table

STRUCTURES = register_table(TableSpec(
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
))

FIGURE_EMBEDDINGS = register_table(TableSpec(
    name="figure_embeddings",
    description="CLIP image embeddings of figure crops (only with cold_storage.clip_weights)",
    schema=pa.schema([
        pa.field("doc_id", pa.string()),
        pa.field("region_id", pa.string()),
        pa.field("model", pa.string()),
        pa.field("vector", pa.list_(pa.float32())),
    ]),
))

CHUNK_SUMMARIES = register_table(TableSpec(
    name="chunk_summaries",
    description="512-d learned summaries of chunks (PCA-reduced tokens -> pooling MLP)",
    schema=pa.schema([
        pa.field("doc_id", pa.string()),
        pa.field("chunk_id", pa.string()),
        pa.field("model_version", pa.string()),
        pa.field("vector", pa.list_(pa.float32(), 512)),
    ]),
))
