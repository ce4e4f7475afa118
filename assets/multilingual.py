"""Corpus stage: multilingual-e5 vectors for the chunks ingestion left without one.

Under `cold_storage.multilingual_embedding: auto` (the default) ingestion embeds only Chinese
chunks with e5, so English-only corpora never load the model. Once the corpus holds a Chinese
document, a Chinese question must reach English documents too, and SBERT cannot carry it (it
reads Chinese as noise); this stage then gives the English chunks their e5 vectors, whichever
order the documents came in. `h3 index-build` runs it after ingestion when there is work;
`dagster dev` runs it after each ingestion (eager)."""

from dagster import AssetExecutionContext, AutomationCondition, MaterializeResult, asset

from h3.assets._multilingual import backfill_vectors
from h3.assets.store import cold_store
from h3.resources.models.multilingual import configured_mode
from h3.resources.store import DocumentStoreResource


@asset(group_name="ingestion", kinds={"torch", "lancedb"}, deps=[cold_store],
       automation_condition=AutomationCondition.eager(),
       description="e5 vectors (chunks_ml) for English chunks once the corpus holds Chinese "
                   "(multilingual_embedding: auto) or for every chunk (all).")
def multilingual_vectors(context: AssetExecutionContext,
                         store: DocumentStoreResource) -> MaterializeResult:
    report = backfill_vectors(store.get_store(), configured_mode(), log=context.log.info)
    if report["chunks_added"]:
        store.get_store().ensure_indexes("chunks_ml")
    return MaterializeResult(metadata=report)
