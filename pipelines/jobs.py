"""Jobs. `ingest_documents` materialises every per-document stage for a set of document
partitions (`h3 index-build`, the inbox sensor and the UI all launch it); `compress_corpus` refits
the corpus-level compression once a batch of documents has landed."""

from __future__ import annotations

from dagster import AssetSelection, Backoff, RetryPolicy, define_asset_job

from h3.assets.partitioning import DOCUMENTS_PARTITIONS

# Per-document stages: the ingestion group (PDF -> store, ending with `ingested_documents`, the
# step that fails the run for documents that did not make it), the knowledge group (graph,
# structure index, CLIP) and the token vectors that corpus compression fits on.
INGEST_ASSETS: list[str] = ["documents", "layout", "tables", "figures", "ocr", "chunks",
                            "embeddings", "cold_store", "knowledge_graph", "structures",
                            "figure_embeddings", "token_vectors", "sections",
                            "ingested_documents"]
# Corpus-level stages (unpartitioned): refit after a batch of documents lands.
COMPRESS_ASSETS: list[str] = ["token_pca", "chunk_pooling", "doc_index"]

# A step that raises (a store briefly unreachable, a worker's disk full) runs again: 2 more
# tries, 5 s then 10 s later; every stage is idempotent per document, so a retry leaves the store
# as one clean run would. A document that fails is not an exception (it is a failed payload), and
# the final gate step's Failure refuses retries, so bad files are never retried.
STEP_RETRIES = RetryPolicy(max_retries=2, delay=5, backoff=Backoff.EXPONENTIAL)

ingest_job = define_asset_job(
    "ingest_documents",
    selection=AssetSelection.assets(*INGEST_ASSETS),
    partitions_def=DOCUMENTS_PARTITIONS,
    description="PDF -> layout, tables, figures, OCR -> chunks -> SBERT vectors -> LanceDB -> "
                "knowledge graph, structure index, CLIP, token vectors. Fails (after storing "
                "the good documents) when any document did not ingest: see ingested_documents.",
    op_retry_policy=STEP_RETRIES,
)

# Corpus-level: e5 vectors for English chunks once the corpus holds Chinese (assets/multilingual.py).
multilingual_job = define_asset_job(
    "embed_multilingual",  # not the asset's name: a job and an op may not share one
    selection=AssetSelection.assets("multilingual_vectors"),
    description="multilingual-e5 vectors for the chunks ingestion left without one, when "
                "cold_storage.multilingual_embedding wants them (auto: the corpus holds Chinese).",
)

compress_job = define_asset_job(
    "compress_corpus",
    selection=AssetSelection.assets(*COMPRESS_ASSETS),
    description="Corpus-level compression: token PCA -> learned chunk pooling -> document "
                "vectors + FAISS index (with their asset checks).",
)
