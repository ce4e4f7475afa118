"""The re-index schedule: every night, rebuild the document store's indexes, and refit the corpus
models (token PCA -> chunk pooling -> document index) when the corpus has drifted since they
were fitted.

Why a schedule and not an automation condition: whether to refit depends on the data (how much
of the corpus changed since the last fit), not on which assets were materialised, so the
decision is made here, at each tick, and recorded on the run as tags.
"""

from __future__ import annotations

import math
import os
from collections import Counter
from dataclasses import dataclass

from dagster import (
    AssetKey,
    AssetSelection,
    DefaultScheduleStatus,
    RunRequest,
    ScheduleEvaluationContext,
    SkipReason,
    define_asset_job,
    schedule,
)

from h3.resources.store import DocumentStore, open_store

REINDEX_CRON = "0 3 * * *"  # 03:00 UTC, when nobody is ingesting
# Refit when added + removed chunks since the last fit reach this share of the fitted corpus.
DRIFT_THRESHOLD = float(os.environ.get("H3_REINDEX_DRIFT", "0.2"))
INDEX_KEYS = [AssetKey("store_indexes")]
REFIT_KEYS = [AssetKey("token_pca"), AssetKey("chunk_pooling"), AssetKey("doc_index")]

reindex_job = define_asset_job(
    "reindex_corpus", selection=AssetSelection.assets(*INDEX_KEYS, *REFIT_KEYS),
    description="Cold-store indexes rebuilt and compacted; token PCA, chunk pooling and the "
                "document index refitted when the corpus drifted (see the run's h3/ tags).")


@dataclass(frozen=True, slots=True)
class Drift:
    fitted: bool  # whether token_pca was ever materialised in this instance
    chunks_now: int  # chunks of ok documents
    chunks_fitted: int  # chunks the last fit saw
    added: int  # chunks of documents stored after the last fit
    removed: int  # chunks the fit saw that are gone
    score: float  # (added + removed) / chunks_fitted; inf when never fitted

    def needs_refit(self, threshold: float = DRIFT_THRESHOLD) -> bool:
        return self.chunks_now > 0 and self.score >= threshold


def corpus_drift(instance, store: DocumentStore) -> Drift:
    """How far the corpus moved since token_pca was last fitted (its materialisation's time and
    chunk count are the reference)."""
    docs = {r["doc_id"]: r["updated_at"] or 0.0
            for r in store.rows("documents", "status = 'ok'", ["doc_id", "updated_at"])}
    per_doc = Counter(r["doc_id"] for r in store.rows("chunks", None, ["doc_id"]))
    chunks_now = sum(per_doc[d] for d in docs)
    event = instance.get_latest_materialization_event(AssetKey("token_pca"))
    if event is None or event.asset_materialization is None:
        return Drift(False, chunks_now, 0, chunks_now, 0, math.inf if chunks_now else 0.0)
    meta = event.asset_materialization.metadata
    fitted = int(meta["chunks"].value) if "chunks" in meta else 0
    added = sum(per_doc[d] for d, t in docs.items() if t > event.timestamp)
    removed = max(0, fitted - (chunks_now - added))
    score = (added + removed) / fitted if fitted else (math.inf if chunks_now else 0.0)
    return Drift(True, chunks_now, fitted, added, removed, score)


def reindex_request(instance, store: DocumentStore,
                    threshold: float = DRIFT_THRESHOLD) -> RunRequest | SkipReason:
    """The run one tick asks for: indexes always (when there is a corpus), refit when drifted."""
    if not store.ok_doc_ids():
        return SkipReason("no ingested documents yet: nothing to index")
    drift = corpus_drift(instance, store)
    refit = drift.needs_refit(threshold)
    return RunRequest(
        asset_selection=INDEX_KEYS + (REFIT_KEYS if refit else []),
        tags={"h3/drift": "never-fitted" if math.isinf(drift.score) else f"{drift.score:.3f}",
              "h3/refit": "yes" if refit else "no", "h3/chunks_added": str(drift.added),
              "h3/chunks_removed": str(drift.removed), "h3/trigger": "reindex-schedule"})


@schedule(job=reindex_job, cron_schedule=REINDEX_CRON, execution_timezone="UTC",
          default_status=DefaultScheduleStatus.STOPPED,
          description=f"Nightly: rebuild indexes; refit PCA and pooling when >= "
                      f"{DRIFT_THRESHOLD:.0%} of the corpus changed since the last fit.")
def reindex_schedule(context: ScheduleEvaluationContext) -> RunRequest | SkipReason:
    return reindex_request(context.instance, open_store())
