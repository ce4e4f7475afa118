"""Jobs. `ingest_documents` materialises every ingestion stage for a set of document partitions;
`h3 index-build`, the inbox sensor and the UI all launch it."""

from __future__ import annotations

from dagster import AssetSelection, define_asset_job

from assets.partitioning import DOCUMENTS_PARTITIONS

# The groups `h3 index-build` runs; later per-document stages (entities, kv...) add their group.
INGEST_GROUPS: list[str] = ["documents", "layout", "tables", "figures", "ocr", "chunks",
                            "embeddings", "store"]
# Per-document semantic stages (knowledge graph, structure index, CLIP, token vectors).
INGEST_GROUPS += ["entities", "structure", "clip", "tokens"]
# Corpus-level stages (unpartitioned): refit after a batch of documents lands.
COMPRESS_GROUPS: list[str] = ["pca", "pooling"]

ingest_job = define_asset_job(
    "ingest_documents",
    selection=AssetSelection.groups(*INGEST_GROUPS),
    partitions_def=DOCUMENTS_PARTITIONS,
    description="PDF -> layout, tables, figures, OCR -> chunks -> SBERT vectors -> LanceDB.",
)

compress_job = define_asset_job(
    "compress_corpus",
    selection=AssetSelection.groups(*COMPRESS_GROUPS),
    description="Corpus-level compression: token PCA -> learned chunk pooling -> document "
                "vectors + FAISS index (with their asset checks).",
)
