"""A user's Dagster project on top of H³: one analysis asset that recalls and asks.

Run it in the Dagster UI beside H³'s own code location, or from Python:

    from dagster import materialize
    from definitions import revenue_review, defs
    materialize([revenue_review], resources=defs.resources)
"""

from dagster import AssetExecutionContext, AssetKey, Definitions, MetadataValue, asset

from h3.resources import DocumentStoreResource, H3RuntimeResource
from resources import RESOURCES  # this project's own resources.py, not H³'s

QUESTION = "What was the total revenue in 2023?"


@asset(deps=[AssetKey("ingested_documents")])  # re-runs after H³ ingests new documents
def revenue_review(context: AssetExecutionContext, store: DocumentStoreResource,
                 runtime: H3RuntimeResource) -> dict:
    hits = store.recall("revenue 2023", k=5, mode="auto")  # list[Hit], best first
    answer = runtime.ask(QUESTION, k=5)  # Answer: text, quotes, refused, reason, generated
    context.add_output_metadata({
        "answer": answer.text or f"refused: {answer.reason}",
        "quotes": MetadataValue.md("\n".join(
            f"- “{q['text']}” ({q['source']} p.{q['page']})" for q in answer.quotes) or "none"),
        "model_text_shown": answer.generated is not None,
        "pages_recalled": [h.page for h in hits],
    })
    return {"question": QUESTION, "answer": answer.text, "quotes": answer.quotes,
            "refused": answer.refused, "reason": answer.reason, "generated": answer.generated}


defs = Definitions(assets=[revenue_review], resources=RESOURCES)
