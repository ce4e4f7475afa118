"""Deleting a document removes its rows in every doc-scoped table, the knowledge-graph nodes only
it supported (shared nodes stay, without it), its figure crops, token vectors, staged payloads,
cold KV and Dagster partition; nothing of another document is touched."""

from __future__ import annotations

import json

import pytest
import torch

DOC_A, DOC_B = "aaaaaaaaaaaaaaaa", "bbbbbbbbbbbbbbbb"


def _edge(doc_id: str, entity: str, text: str) -> dict:
    return {"edge_id": f"{doc_id}-{entity}", "doc_id": doc_id, "relation": "mentions",
            "head_id": f"doc:{doc_id}", "tail_id": entity, "head_text": doc_id,
            "tail_text": text, "head_type": "DOCUMENT", "tail_type": "ORG", "page": 1,
            "bbox": [0.0, 0.0, 10.0, 10.0], "sentence": f"{text} appears here.", "rule": "ner",
            "extra_json": json.dumps({"count": 1, "surfaces": {text: 1}, "types": {"ORG": 1}})}


def _doc_kv(root):
    from h3_runtime.kvcache.cold import KVBlockStore
    from h3_runtime.reuse.doc_kv import DocumentKV

    return DocumentKV(KVBlockStore(root.parent, 10**8), root, block_tokens=2)


def _store_kv(root, doc_id: str):
    """A's and B's tokens share their first block ([1, 2]): deleting A keeps it for B."""
    kv = _doc_kv(root)
    index = kv.put(doc_id, "test-model", [1, 2, 3, int(doc_id[0], 16)],
                   torch.zeros(2, 1, 4, 4), torch.ones(2, 1, 4, 4))  # (L, H_kv, T, D)
    return kv, index.key


@pytest.fixture
def two_documents(h3_home):
    """Two documents in a real LanceDB store: shared entity `acme`, `only-a` mentioned by A only;
    rows, files, KV and partitions for both."""
    from h3.pipelines.instance import get_instance
    from h3.pipelines.partitions import add_partitions
    from h3.resources.graph.store import refresh_nodes
    from h3.resources.runtime import doc_kv_root
    from h3.resources.settings import load_config
    from h3.resources.store import open_store
    from h3.resources.store.tables import EDGES

    store = open_store()
    kv_keys = {}
    for doc_id in (DOC_A, DOC_B):
        store.upsert_document({"doc_id": doc_id, "source": f"/in/{doc_id}.pdf",
                               "content_hash": doc_id, "status": "ok", "reason": None,
                               "pages": 1, "title": doc_id, "metadata_json": "{}", "bytes": 1,
                               "updated_at": 0.0})
        store.add("chunks", [{"doc_id": doc_id, "chunk_id": f"{doc_id}:c0", "page": 1,
                              "bbox": [0.0, 0.0, 1.0, 1.0], "text": "Acme revenue", "section": "",
                              "kind": "text", "token_count": 2, "region_ids": [],
                              "vector": [0.0] * 383 + [1.0]}])
        for folder in ("figures", "staging/chunks"):
            (h3_home / folder).mkdir(parents=True, exist_ok=True)
        (h3_home / "figures" / doc_id).mkdir()
        (h3_home / "figures" / doc_id / "p1-f0.png").write_bytes(b"png")
        (h3_home / "staging" / "chunks" / f"{doc_id}.json").write_text("{}")
        _, kv_keys[doc_id] = _store_kv(doc_kv_root(load_config().runtime), doc_id)
    store.add(EDGES.name, [_edge(DOC_A, "acme", "Acme"), _edge(DOC_A, "only-a", "Solo Ltd"),
                           _edge(DOC_B, "acme", "ACME")])
    refresh_nodes(store, ["acme", "only-a"])
    store.add("kv_blocks", [{"doc_id": DOC_A, "kv_key": kv_keys[DOC_A], "model_key": "m",
                             "format_version": 1, "group": 0, "token_start": 0, "token_end": 4,
                             "bytes": 1, "crc32": 0, "chunks": 1, "created_at": 0.0}])
    instance = get_instance()
    add_partitions(instance, [DOC_A, DOC_B])
    return {"store": store, "instance": instance, "kv": kv_keys, "home": h3_home}


def test_delete_document_removes_every_trace_and_only_its_own(two_documents):
    from h3.pipelines.deletion import delete_document
    from h3.resources.runtime import doc_kv_root
    from h3.resources.settings import load_config

    store, instance, home = (two_documents[k] for k in ("store", "instance", "home"))
    report = delete_document(DOC_A, instance=instance)

    for table in store.doc_scoped_tables():
        assert not store.rows(table, f"doc_id = '{DOC_A}'"), table
        if table in ("documents", "chunks", "edges"):
            assert store.rows(table, f"doc_id = '{DOC_B}'"), table
    nodes = {n["entity_id"]: n for n in store.rows("entities")}
    assert "only-a" not in nodes and report.entities_removed == ["only-a"]
    assert nodes["acme"]["doc_ids"] == [DOC_B] and nodes["acme"]["aliases"] == ["ACME"]
    assert not (home / "figures" / DOC_A).exists() and (home / "figures" / DOC_B).exists()
    assert not (home / "staging" / "chunks" / f"{DOC_A}.json").exists()
    kv_root = doc_kv_root(load_config().runtime)
    assert report.kv_removed == [two_documents["kv"][DOC_A]]
    kv = _doc_kv(kv_root)  # a new process's view of the folder
    assert kv.find(DOC_A, "test-model") is None
    assert kv.find(DOC_B, "test-model").key == two_documents["kv"][DOC_B]
    assert len(kv.blocks) == 2  # B's two blocks; A's own second block is gone
    assert instance.get_dynamic_partitions("documents") == [f"{DOC_B}.pdf-{DOC_B}"]
    assert store.ok_doc_ids() == {DOC_B}

    again = delete_document(DOC_A, instance=instance)  # idempotent
    assert again.rows == {} and again.kv_removed == [] and again.files_removed == 0


def test_delete_removes_the_kv_of_the_documents_navigated_parts(two_documents):
    """`h3 ask --doc` stores a part's KV under "<doc_id>#<part>": deleting the document (or a
    changed file replacing it) drops those too, and no part of another document."""
    from h3.pipelines.deletion import delete_document
    from h3.resources.navigation.prompts import part_kv_id
    from h3.resources.runtime import doc_kv_root
    from h3.resources.settings import load_config

    kv_root = doc_kv_root(load_config().runtime)
    _, part_a = _store_kv(kv_root, part_kv_id(DOC_A, "s1.1"))
    _, part_b = _store_kv(kv_root, part_kv_id(DOC_B, "s2"))
    report = delete_document(DOC_A, instance=two_documents["instance"])
    assert part_a in report.kv_removed
    kv = _doc_kv(kv_root)  # a new process's view of the folder
    assert kv.find(part_kv_id(DOC_A, "s1.1"), "test-model") is None
    assert kv.find(part_kv_id(DOC_B, "s2"), "test-model").key == part_b
    assert kv.find(DOC_B, "test-model").key == two_documents["kv"][DOC_B]


@pytest.mark.parametrize("bad", ["../../etc", "AAAAAAAAAAAAAAAA", "a' OR '1'='1", ""])
def test_delete_refuses_anything_but_a_document_id(h3_home, bad):
    from h3.pipelines.deletion import delete_document

    with pytest.raises(ValueError, match="not a document id"):
        delete_document(bad, instance=object())


def test_delete_job_runs_in_the_instance(two_documents):
    from h3.pipelines.definitions import defs

    result = defs.resolve_job_def("delete_documents").execute_in_process(
        run_config={"ops": {"delete_documents_op": {"config": {"doc_ids": [DOC_B]}}}},
        instance=two_documents["instance"])
    assert result.success
    assert two_documents["store"].ok_doc_ids() == {DOC_A}
    keys = two_documents["instance"].get_dynamic_partitions("documents")
    assert keys == [f"{DOC_A}.pdf-{DOC_A}"]


def test_delete_takes_a_partition_key_as_the_ui_shows_it():
    from h3.pipelines.cli.delete import resolve_targets

    rows = [{"doc_id": "3f9a1c2b4d5e6f70", "source": "/in/annual-report.pdf"}]
    assert resolve_targets(rows, ["annual-report.pdf-3f9a1c2b4d5e6f70"]) == (["3f9a1c2b4d5e6f70"], [])
    assert resolve_targets(rows, ["3f9a1c2b4d5e6f70"]) == (["3f9a1c2b4d5e6f70"], [])
    assert resolve_targets(rows, ["other.pdf-0000000000000000"]) == ([], ["other.pdf-0000000000000000"])
