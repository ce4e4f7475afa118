"""Stage: CLIP image embeddings of figure crops (open_clip, weights from a local file).

With `cold_storage.clip_weights` unset (no registry ships CLIP weights), the stage does nothing
and says so in its log and metadata; figures stay recallable by caption and OCR text through
the `structures` table.
"""

from dagster import AssetExecutionContext

from h3.assets._batch import per_document, summary_metadata
from h3.assets.partitioning import document_asset
from h3.resources.semantic.clip import ClipEmbedder, load_clip
from h3.resources.settings import load_config
from h3.resources.store import DocumentStore, DocumentStoreResource, sql_str
from h3.resources.store.tables import FIGURE_EMBEDDINGS


def embed_document_figures(store: DocumentStore, clip: ClipEmbedder, doc_id: str) -> dict:
    """Replaces the document's figure embeddings; returns how many figures were embedded."""
    figures = [r for r in store.rows("regions", f"doc_id = {sql_str(doc_id)} AND kind = 'figure'",
                                     ["region_id", "image_path"]) if r["image_path"]]
    vectors = clip.embed_images([f["image_path"] for f in figures]) if figures else []
    store.delete_where(FIGURE_EMBEDDINGS.name, f"doc_id = {sql_str(doc_id)}")
    store.add(FIGURE_EMBEDDINGS.name, [
        {"doc_id": doc_id, "region_id": f["region_id"], "model": clip.name,
         "vector": [float(x) for x in v]} for f, v in zip(figures, vectors, strict=True)])
    return {"figures_embedded": len(figures)}


@document_asset(group_name="knowledge", kinds={"torch", "lancedb"},
       description="CLIP embeddings of figure crops (only with cold_storage.clip_weights set).")
def figure_embeddings(context: AssetExecutionContext, cold_store: dict,
                      store: DocumentStoreResource) -> dict:
    cfg = load_config().cold_storage
    clip, why_not = load_clip(cfg.clip_weights, cfg.clip_arch)
    if clip is None:
        context.log.warning(f"CLIP: {why_not}")
        context.add_output_metadata({"clip": why_not, "figures_embedded": 0})
        return {d: {"status": p.get("status", "failed"), "reason": p.get("reason"),
                    "skipped": why_not} for d, p in cold_store.items()}
    db = store.get_store()
    results = per_document(context, lambda d, _: embed_document_figures(db, clip, d), cold_store)
    meta = summary_metadata(results)
    meta["clip"] = clip.name
    meta["figures_embedded"] = sum(p.get("figures_embedded", 0) for p in results.values())
    context.add_output_metadata(meta)
    return results
