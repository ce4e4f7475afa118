"""The re-index schedule, evaluated with `build_schedule_context` on a real instance and store:
indexes are rebuilt every tick, PCA and pooling are refitted only when the corpus drifted since
the last fit; and the run it asks for really works on an ingested corpus."""

from __future__ import annotations

import math
import shutil
import time

import pytest
from dagster import AssetMaterialization, RunRequest, SkipReason, build_schedule_context

INDEX = {"store_indexes"}
REFIT = {"store_indexes", "token_pca", "chunk_pooling", "doc_index"}


def _add_doc(store, doc_id: str, chunks: int, updated_at: float) -> None:
    store.upsert_document({"doc_id": doc_id, "source": f"/in/{doc_id}.pdf", "content_hash": doc_id,
                           "status": "ok", "reason": None, "pages": 1, "title": doc_id,
                           "metadata_json": "{}", "bytes": 1, "updated_at": updated_at})
    store.add("chunks", [{"doc_id": doc_id, "chunk_id": f"{doc_id}:c{i}", "page": 1,
                          "bbox": [0.0, 0.0, 1.0, 1.0], "text": f"chunk {i}", "section": "",
                          "kind": "text", "token_count": 2, "region_ids": [],
                          "vector": [0.0] * 383 + [1.0]} for i in range(chunks)])


def _tick(instance):
    from h3.pipelines.schedules import reindex_schedule

    # closed after the tick: the context enters an instance of its own, which sets Dagster's
    # process-wide defs-state storage to this test's home until it is closed (left open, every
    # later `materialize` in the process read a home a passing test had already removed)
    with build_schedule_context(instance=instance) as context:
        return reindex_schedule(context)


def _selected(request: RunRequest) -> set[str]:
    return {key.to_user_string() for key in request.asset_selection}


def test_schedule_refits_only_when_the_corpus_drifted(h3_home):
    from h3.pipelines.instance import get_instance
    from h3.pipelines.schedules import DRIFT_THRESHOLD
    from h3.resources.store import open_store

    instance, store = get_instance(), open_store()
    assert isinstance(_tick(instance), SkipReason)  # empty store: nothing to index

    _add_doc(store, "a" * 16, chunks=10, updated_at=time.time() - 100)
    first = _tick(instance)
    assert _selected(first) == REFIT and first.tags["h3/drift"] == "never-fitted"

    instance.report_runless_asset_event(AssetMaterialization("token_pca",
                                                             metadata={"chunks": 10}))
    time.sleep(0.01)
    calm = _tick(instance)
    assert _selected(calm) == INDEX and calm.tags == {**calm.tags, "h3/refit": "no",
                                                       "h3/drift": "0.000"}

    _add_doc(store, "b" * 16, chunks=1, updated_at=time.time())  # 1 / 10 < threshold
    assert DRIFT_THRESHOLD > 0.1 and _selected(_tick(instance)) == INDEX
    _add_doc(store, "c" * 16, chunks=2, updated_at=time.time())  # 3 / 10 >= threshold
    drifted = _tick(instance)
    assert _selected(drifted) == REFIT and drifted.tags["h3/chunks_added"] == "3"

    instance.report_runless_asset_event(AssetMaterialization("token_pca",
                                                             metadata={"chunks": 13}))
    time.sleep(0.01)
    store.delete_document("a" * 16)  # 10 of 13 fitted chunks gone
    shrunk = _tick(instance)
    assert _selected(shrunk) == REFIT and shrunk.tags["h3/chunks_removed"] == "10"


def test_drift_is_infinite_before_any_fit_and_zero_without_documents(h3_home):
    from h3.pipelines.instance import get_instance
    from h3.pipelines.schedules import corpus_drift
    from h3.resources.store import open_store

    instance, store = get_instance(), open_store()
    assert corpus_drift(instance, store).score == 0.0
    _add_doc(store, "d" * 16, chunks=2, updated_at=1.0)
    drift = corpus_drift(instance, store)
    assert math.isinf(drift.score) and drift.needs_refit() and not drift.fitted


@pytest.mark.slow
def test_reindex_run_on_the_ingested_sample(ingested_sample, tmp_path):
    """On a copy of the ingested sample corpus (whose `h3 index-build` already fitted PCA and
    pooling through compress_corpus), the schedule asks for indexes only; a refit request (as a
    drifted corpus gets) and the next tick's index-only request both run for real; nothing
    Dagster stored is a pickle."""
    from h3.pipelines.definitions import defs
    from h3.pipelines.instance import get_instance
    from h3.pipelines.schedules import reindex_request
    from h3.resources.store import open_store
    from tests.conftest import h3_home_env
    from tests.security.scan import find_pickles

    home = tmp_path / "h3"
    shutil.copytree(ingested_sample["home"], home)
    with h3_home_env(home):
        instance, store = get_instance(), open_store()
        job = defs.resolve_job_def("reindex_corpus")
        calm = _tick(instance)
        assert _selected(calm) == INDEX and calm.tags["h3/drift"] == "0.000"
        first = reindex_request(instance, store, threshold=0.0)  # any drift at all -> refit
        assert _selected(first) == REFIT
        result = job.execute_in_process(instance=instance, asset_selection=first.asset_selection,
                                        tags=first.tags)
        assert result.success
        meta = result.asset_materializations_for_node("store_indexes")[0].metadata
        assert meta["tables"].value >= 3 and "chunks" in meta["by_table"].value
        assert (home / "semantic" / "doc_index.faiss").exists()

        second = _tick(instance)
        assert _selected(second) == INDEX and second.tags["h3/drift"] == "0.000"
        assert job.execute_in_process(instance=instance, asset_selection=second.asset_selection
                                      ).success
        assert store.ok_doc_ids() == {d["doc_id"] for d in ingested_sample["report"]["documents"]}
        assert find_pickles(home) == []
