"""The asset groups: one per concern of the pipeline, so the catalog and the lineage read as a
map (Dagster has no group descriptions of its own; the README shows this table)."""

GROUPS: dict[str, str] = {
    "ingestion": "PDF -> checked document -> layout, tables, figures, OCR -> chunks -> SBERT "
                 "vectors -> LanceDB; `ingested_documents` shows which documents made it.",
    "knowledge": "What recall searches besides text: the knowledge graph (entities, relations), "
                 "the structure index (tables, formulas), CLIP figure vectors.",
    "compression": "Token vectors per document, then corpus-level PCA, learned chunk pooling and "
                   "the FAISS document index.",
    "kv": "Precomputed cold KV per document for the H3 runtime.",
    "analysis": "Answers computed with the runtime: summaries, key facts, cross-document checks.",
    "operations": "Upkeep of the store: the scheduled re-index and compaction.",
}
