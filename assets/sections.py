"""Stage `sections`: each document's section tree (H⁴ navigation), stored in the `sections` table.

Top sections come from the PDF's outline when it has one, else from the headings its chunks
open with (resources/navigation/tree.py); each is cut into parts of at most ~1.2K tokens, the
units `h3 ask --doc` loads. Every node keeps an extractive summary and its chunks' centroid
vector. The UI shows the outline of each document (sections, pages, tokens).
"""

from dagster import AssetExecutionContext, MetadataValue

from h3.assets._batch import markdown_table, per_document, summary_metadata
from h3.assets.partitioning import document_asset
from h3.resources.navigation.store import build_for, save_sections
from h3.resources.store import DocumentStoreResource


@document_asset(group_name="knowledge", deps=["cold_store"],
                description="The section tree of each document (PDF outline, else its headings) "
                            "cut into parts a question loads, with extractive summaries.")
def sections(context: AssetExecutionContext, store: DocumentStoreResource) -> dict:
    db = store.get_store()

    def one(doc_id: str) -> dict:
        doc = db.get_document(doc_id)
        if doc is None or doc.get("status") != "ok":
            reason = "not in the document store" if doc is None else doc.get("reason") or "not ok"
            return {"status": "failed", "reason": f"document {doc_id}: {reason}"}
        tree = build_for(db, doc)
        save_sections(db, doc_id, tree)
        top = [s for s in tree if s.level == 1]
        return {"status": "ok", "source": doc.get("source"), "origin": top[0].origin,
                "sections": len(top), "parts": len(tree) - len(top),
                "outline": [{"id": s.section_id, "pages": s.pages, "tokens": s.tokens,
                             "title": s.title} for s in top]}

    results = per_document(context, one)
    meta = summary_metadata(results, preview=[
        {"doc_id": d, "origin": p.get("origin"), "sections": p.get("sections"),
         "parts": p.get("parts"), "status": p["status"]} for d, p in results.items()])
    for doc_id, p in list(results.items())[:3]:  # the outline itself, for the first documents
        meta[f"outline_{doc_id}"] = MetadataValue.md(markdown_table(p.get("outline") or [],
                                                                    max_rows=40))
    context.add_output_metadata(meta)
    return results
