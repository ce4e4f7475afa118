"""The knowledge graph in a real LanceDB store: writing, node refresh across documents,
deletion, and relation recall straight from the tables (no Dagster)."""

from h3.resources.graph.store import rebuild_all_nodes, write_document_graph
from h3.resources.nlp.extract import TextUnit, extract
from h3.resources.recall.relation import relation_recall
from h3.resources.recall.router import RecallContext
from h3.resources.store.lance import LanceDocumentStore

BOX = (72.0, 100.0, 523.0, 160.0)


def ingest_text(store, doc_id: str, texts: list[str]) -> None:
    store.upsert_document({"doc_id": doc_id, "source": f"{doc_id}.pdf", "status": "ok",
                           "pages": 1})
    write_document_graph(store, doc_id, extract([TextUnit(doc_id, 1, BOX, t) for t in texts]))


def test_nodes_span_documents_and_follow_deletions(tmp_path):
    store = LanceDocumentStore(tmp_path / "lancedb")
    ingest_text(store, "a", ["Greenleaf Foods has bought Orchard Valley Farms."])
    ingest_text(store, "b", ["Greenleaf Foods is headquartered in Minneapolis."])
    ingest_text(store, "b", ["Greenleaf Foods is headquartered in Minneapolis."])  # idempotent
    nodes = {n["name"]: n for n in store.rows("entities")}
    assert nodes["Greenleaf Foods"]["doc_ids"] == ["a", "b"]
    assert store.count_rows("edges") == len(store.rows("edges", "doc_id = 'a'")) + len(
        store.rows("edges", "doc_id = 'b'"))
    ctx = RecallContext(store=store, ok_doc_ids={"a", "b"},
                        doc_sources={"a": "a.pdf", "b": "b.pdf"}, embed=lambda t: None)
    (hit,) = relation_recall(ctx, "Which company did Greenleaf Foods buy?", 1)
    assert hit.via == "relation" and hit.page == 1 and hit.bbox == BOX
    assert [e["text"] for e in hit.entities] == ["Greenleaf Foods", "Orchard Valley Farms"]
    assert hit.entities[0]["relation"] == "acquired"

    store.delete_document("a")
    assert rebuild_all_nodes(store) == store.count_rows("entities")
    nodes = {n["name"]: n for n in store.rows("entities")}
    assert nodes["Greenleaf Foods"]["doc_ids"] == ["b"] and "Orchard Valley Farms" not in nodes
    ctx.ok_doc_ids = {"b"}
    hits = relation_recall(ctx, "Which company did Greenleaf Foods buy?", 5)
    assert [h.doc_id for h in hits] == ["b"]  # only the HQ edge is left, as context
    assert relation_recall(ctx, "What is the weather like?", 5) == []


def test_the_gazetteer_is_saved_for_the_next_process_and_rebuilt_when_the_graph_changes(
        tmp_path, monkeypatch):
    from h3.resources.recall import gazetteer

    monkeypatch.setenv("H3_HOME", str(tmp_path / "h3"))
    store = LanceDocumentStore(tmp_path / "lancedb")
    ingest_text(store, "a", ["Greenleaf Foods has bought Orchard Valley Farms."])
    names = gazetteer.gazetteer(store)
    (saved,) = (tmp_path / "h3" / "cache" / "gazetteer").glob("*.json")
    assert "greenleaf foods" in {n.lower() for n in names}
    # a new process (nothing in memory) reads the saved names instead of every entity row
    gazetteer._CACHE.clear()
    monkeypatch.setattr(gazetteer, "_build_gazetteer", lambda *a: {"read": ["rows"]})
    assert gazetteer.gazetteer(store) == names
    # a changed graph (another document) is a new version: its names are built and saved anew
    monkeypatch.undo()
    monkeypatch.setenv("H3_HOME", str(tmp_path / "h3"))
    ingest_text(store, "b", ["Harbor Mills is headquartered in Duluth."])
    gazetteer._CACHE.clear()
    again = gazetteer.gazetteer(store)
    assert "harbor mills" in {n.lower() for n in again} and not saved.exists()
    assert len(list(saved.parent.glob("*.json"))) == 1
