"""Resources build their clients in `setup_for_execution`: a run gets its own store and embedder
objects (the model weights behind the embedder stay shared per process, on purpose)."""

from __future__ import annotations

from dagster import asset, materialize

from h3.resources.models.embedder import get_embedder
from h3.resources.models.embedder_resource import SbertEmbedderResource
from h3.resources.store import DocumentStoreResource, open_store


def test_a_run_builds_its_own_store_and_embedder(tmp_path):
    seen: dict = {}

    @asset
    def probe(store: DocumentStoreResource, embedder: SbertEmbedderResource) -> None:
        seen["store"] = store.get_store()
        seen["again"] = store.get_store()
        seen["embedder"] = embedder.get_embedder()
        seen["vector"] = seen["embedder"].encode(["pump pressure"])

    resources = {"store": DocumentStoreResource(path=str(tmp_path / "db")),
                 "embedder": SbertEmbedderResource(precision="fp32")}
    assert materialize([probe], resources=resources).success
    assert seen["store"] is seen["again"]  # one client for the whole run
    assert seen["store"] is not open_store(str(tmp_path / "db"))  # not the CLI's process-wide one
    assert seen["store"].path == tmp_path / "db"
    shared = get_embedder(precision="fp32")
    assert seen["embedder"] is not shared and seen["embedder"].model is shared.model
    assert abs(float(seen["vector"][0] @ shared.encode(["pump pressure"])[0]) - 1.0) < 1e-5
    first = seen["store"]
    assert materialize([probe], resources=resources).success
    assert seen["store"] is not first  # the next run builds its own
