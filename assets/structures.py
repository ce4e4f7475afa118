"""Stage: structures. Every table, figure and formula region with its caption and surrounding
text, embedded (SBERT) into the `structures` table that structural recall ranks."""

import logging

import pymupdf
from dagster import AssetExecutionContext, MetadataValue

from h3.assets._batch import per_document, summary_metadata
from h3.assets._page_space import page_box
from h3.assets.documents import unreadable
from h3.assets.partitioning import document_asset
from h3.resources.models.embedder_resource import SbertEmbedderResource
from h3.resources.recall.structure import EXACT_LIMIT
from h3.resources.semantic.structures import STRUCTURAL_KINDS, structure_rows
from h3.resources.store import DocumentStore, DocumentStoreResource, sql_str
from h3.resources.store.tables import STRUCTURES

TEXT_ONLY = pymupdf.TEXTFLAGS_DICT & ~pymupdf.TEXT_PRESERVE_IMAGES
log = logging.getLogger(__name__)


def page_text(source: str, pages: set[int], failures: list[str] | None = None
              ) -> tuple[dict, dict, dict]:
    """Text blocks ({page: [(bbox, text)]}), lines ({page: [(bbox, text, block)]}) and heights
    of these pages of the PDF; all empty when the file cannot be read any more (the regions'
    own text then stands in): logged, and said in `failures` (the document's warnings)."""
    blocks: dict[int, list] = {}
    lines: dict[int, list] = {}
    heights: dict[int, float] = {}
    try:
        with pymupdf.open(source) as pdf:
            for number in sorted(pages):
                page = pdf[number - 1]
                heights[number] = page_box(page).height
                blocks[number], lines[number] = [], []
                # text only: image blocks would carry their decoded pixels (3x the time)
                for b in page.get_text("dict", flags=TEXT_ONLY)["blocks"]:
                    if b.get("type") != 0 or unreadable(
                            "".join(s["text"] for ln in b["lines"] for s in ln["spans"])):
                        continue  # glyph garbage is no context for a caption
                    texts = []
                    for ln in b["lines"]:
                        text = "".join(s["text"] for s in ln["spans"])
                        if text.strip():
                            lines[number].append((list(ln["bbox"]), text, b["number"]))
                            texts.append(text)
                    if texts:
                        blocks[number].append((list(b["bbox"]), "\n".join(texts)))
    except (RuntimeError, ValueError, IndexError, OSError) as exc:  # moved, replaced, not a PDF
        reason = (f"{source}: its pages could not be read again for the structures' captions "
                  f"and context ({type(exc).__name__}: {exc}); the regions' own text is used")
        log.warning(reason)
        if failures is not None:
            failures.append(reason)
        return {}, {}, {}
    return blocks, lines, heights


def structures_for_document(store: DocumentStore, embed, doc_id: str) -> dict:
    """Replaces the document's structure rows; returns their count and kinds."""
    regions = store.rows("regions", f"doc_id = {sql_str(doc_id)}")
    pages = {int(r["page"]) for r in regions if r["kind"] in STRUCTURAL_KINDS}
    docs = store.rows("documents", f"doc_id = {sql_str(doc_id)}", ["source"])
    warnings: list[str] = []
    blocks, lines, heights = (page_text(docs[0]["source"], pages, warnings) if docs and pages
                              else ({}, {}, {}))
    rows = structure_rows(regions, blocks, heights, lines)
    if rows:
        vectors = embed([r.pop("embed_text") or r["text"] for r in rows])  # (N, 384)
        for row, vec in zip(rows, vectors, strict=True):
            row["vector"] = [float(x) for x in vec]
    store.delete_where(STRUCTURES.name, f"doc_id = {sql_str(doc_id)}")
    store.add(STRUCTURES.name, rows)
    kinds = {}
    for r in rows:
        kinds[r["kind"]] = kinds.get(r["kind"], 0) + 1
    return {"structures": len(rows), "kinds": kinds, "warnings": warnings,
            "preview": [{"page": r["page"], "kind": r["kind"], "caption": r["caption"] or "-"}
                        for r in rows[:5]]}


@document_asset(group_name="knowledge", kinds={"lancedb"},
                description="Tables, figures and formulas with caption + context, embedded for "
                   "structural recall (LanceDB `structures`).")
def structures(context: AssetExecutionContext, cold_store: dict, store: DocumentStoreResource,
               embedder: SbertEmbedderResource) -> dict:
    db = store.get_store()
    embed = embedder.get_embedder().encode
    results = per_document(context, lambda d, _: structures_for_document(db, embed, d),
                           cold_store)
    ok = [p for p in results.values() if p.get("status") == "ok"]
    meta = summary_metadata(results, preview=[r for p in ok for r in p["preview"]])
    meta["structures"] = sum(p["structures"] for p in ok)
    warnings = [w for p in ok for w in p.get("warnings") or []]
    for warning in warnings:
        context.log.warning(warning)
    if warnings:  # the run page says what was worked around, not only the counts
        meta["warnings"] = MetadataValue.md("\n".join(f"- {w}" for w in warnings[:20]))
    for kind in ("table", "figure", "formula"):
        meta[f"{kind}s"] = sum(p["kinds"].get(kind, 0) for p in ok)
    if db.count_rows(STRUCTURES.name) > EXACT_LIMIT:  # below it recall scores every row
        db.ensure_indexes(STRUCTURES.name)
    context.add_output_metadata(meta)
    return results
