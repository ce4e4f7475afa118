"""Stage 6: regions (layout + tables + figures + OCR, in reading order) and section-aware chunks
of ~256 tokens, each with its page and bbox."""


from dagster import AssetExecutionContext

from h3.assets._batch import per_document, summary_metadata
from h3.assets._chunking import build_chunks, build_regions
from h3.assets.partitioning import document_asset
from h3.ontology.records import (
    ChunkRecord,
    ChunksRecord,
    DocumentRecord,
    FiguresRecord,
    LayoutRecord,
    OcrRecord,
    TablesRecord,
)
from h3.resources.models.embedder import MAX_TOKENS
from h3.resources.models.embedder_resource import SbertEmbedderResource


def document_warnings(doc: DocumentRecord, ocr: OcrRecord, chunks: list[ChunkRecord]
                      ) -> list[str]:
    """What a user should know about an ingested document (stored in its metadata, shown by
    index-build): a repaired file, unreadable text, pages OCR skipped or failed on, no text."""
    warnings = list(doc.warnings)
    warnings += ocr.errors or []
    if ocr.skipped_pages:
        warnings.append(f"{doc.source}: {len(ocr.skipped_pages)} pages without a text "
                        "layer not read (cold_storage.ocr_enabled is false)")
    if not chunks:
        warnings.append(f"{doc.source}: no text found (not even by OCR): the document is "
                        "stored but nothing in it can be recalled by text")
    return warnings


@document_asset(group_name="ingestion",
       description="Regions in reading order and ~256-token section-aware chunks with page+bbox.")
def chunks(context: AssetExecutionContext, documents: dict, layout: dict, tables: dict,
           figures: dict, ocr: dict, embedder: SbertEmbedderResource) -> dict:
    count = embedder.get_embedder().count_tokens

    def one(doc_id: str, doc: DocumentRecord, lay: LayoutRecord, tab: TablesRecord,
            fig: FiguresRecord, text: OcrRecord) -> ChunksRecord:
        regions = build_regions(doc_id, lay, tab, fig, text)
        found = build_chunks(doc_id, regions, count, MAX_TOKENS)
        return ChunksRecord(source=doc.source, regions=tuple(regions), chunks=tuple(found),
                            warnings=tuple(document_warnings(doc, text, found)))

    results = per_document(context, one, documents, layout, tables, figures, ocr,
                           reads=(DocumentRecord, LayoutRecord, TablesRecord, FiguresRecord,
                                  OcrRecord))
    preview = [{"chunk": c["chunk_id"].split(":")[-1], "page": c["page"], "kind": c["kind"],
                "section": c["section"][:40], "tokens": c["token_count"], "text": c["text"][:80]}
               for v in results.values() for c in (v.get("chunks") or [])]
    meta = summary_metadata(results, "chunks", preview)
    meta["regions"] = sum(len(v.get("regions") or []) for v in results.values())
    context.add_output_metadata(meta)
    return results
