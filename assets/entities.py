"""Stage: entities and relations -> the knowledge graph (`edges`, `entities` tables).

Per document: every text region goes through spaCy NER (en_core_web_sm + the ontology's
EntityRuler patterns; Chinese by rules) and the relation patterns; edges land in `edges` with
their provenance (doc, page, bbox, sentence) and the touched nodes in `entities` are recomputed
across documents. `cold_storage.knowledge_graph_enabled: false` turns the stage into a no-op
that says so in its metadata.
"""

import json
import time

from dagster import (
    AssetCheckResult,
    AssetCheckSeverity,
    AssetExecutionContext,
    MetadataValue,
    asset_check,
)

from h3.assets._batch import markdown_table, per_document, summary_metadata
from h3.assets.partitioning import document_asset
from h3.resources.document_workers import Outcome, map_documents
from h3.resources.graph.build import MENTIONS
from h3.resources.graph.store import write_document_graph
from h3.resources.nlp.extract import TextUnit, extract
from h3.resources.nlp.issuer import DocumentProfile
from h3.resources.nlp.roles import RoleUnit, extract_roles
from h3.resources.settings import load_config
from h3.resources.store import DocumentStore, DocumentStoreResource, sql_str
from h3.resources.store.tables import EDGES, ENTITIES

TEXT_KINDS = ("text", "title", "list", "caption", "ocr_text")
NER_S_PER_REGION = 1 / 300  # spaCy's English pipeline on one core, a text region (a paragraph)


def document_units(store: DocumentStore, doc_id: str) -> list[TextUnit]:
    """The document's text regions in reading order, as NER input with their page and box."""
    rows = store.rows("regions", f"doc_id = {sql_str(doc_id)}",
                      ["doc_id", "page", "order", "kind", "bbox", "text"])
    rows.sort(key=lambda r: (r["page"], r["order"]))
    return [TextUnit(doc_id, int(r["page"]), tuple(float(v) for v in r["bbox"]), r["text"])
            for r in rows if r["kind"] in TEXT_KINDS and (r["text"] or "").strip()]


def _readable_units(store: DocumentStore, doc_ids: list[str]) -> dict[str, list[TextUnit]]:
    """document_units of each document that can be read (one that cannot fails on its own,
    later, in per_document)."""
    units = {}
    for doc_id in doc_ids:
        try:
            units[doc_id] = document_units(store, doc_id)
        except Exception:  # noqa: BLE001, S112 - per_document reads it again and reports why
            continue
    return units


def role_units(store: DocumentStore, doc_id: str) -> list[RoleUnit]:
    """Text, table and figure regions in reading order, lines kept: officer lists, executive
    tables and signature blocks (resources/nlp/roles.py). Figures too: the layout model takes
    a signature page's two-column block for a picture, and its text layer still says who
    signed."""
    rows = store.rows("regions", f"doc_id = {sql_str(doc_id)}",
                      ["page", "order", "kind", "bbox", "text"])
    rows.sort(key=lambda r: (r["page"], r["order"]))
    return [RoleUnit(doc_id, int(r["page"]), tuple(float(v) for v in r["bbox"]), r["text"])
            for r in rows if r["kind"] in TEXT_KINDS + ("table", "figure")
            and (r["text"] or "").strip()]


def document_profile(store: DocumentStore, doc_id: str) -> DocumentProfile:
    """The issuer profile the `documents` stage stored, read again from the file when an older
    profiler wrote it (empty for documents stored before profiles)."""
    from h3.resources.recall.documents import current_profile

    row = store.get_document(doc_id) or {}
    stored = json.loads(row.get("metadata_json") or "{}").get("profile")
    return current_profile(stored, row.get("source") or "")


def graph_for_document(store: DocumentStore, doc_id: str,
                       extracted: Outcome | None = None) -> dict:
    """Extracts (or takes `extracted`, `extract`'s outcome on a document worker) and stores
    one document's graph; returns counts and a few edges."""
    if extracted is None:
        extracted = Outcome(extract(document_units(store, doc_id)), None, 0.0, 0.0)
    if extracted.error is not None:
        raise extracted.error
    extraction = extracted.value
    profile = document_profile(store, doc_id)  # offices "the Company" holds go to its issuer
    extraction.edges.extend(extract_roles(role_units(store, doc_id), profile.issuer,
                                          profile.aliases))
    counts = write_document_graph(store, doc_id, extraction)
    sample = [{"head": e.head_text, "relation": e.relation, "tail": e.tail_text, "page": e.page}
              for e in extraction.edges[:5]]
    return {**counts, "sample": sample, "worker_seconds": extracted.seconds,
            "worker_cpu_seconds": extracted.cpu_seconds}


@document_asset(group_name="knowledge", kinds={"spacy", "lancedb"},
       description="Named entities and relations of each document into the knowledge graph "
                   "(LanceDB `edges` + `entities`), every edge with doc/page/bbox/sentence.")
def knowledge_graph(context: AssetExecutionContext, cold_store: dict,
                    store: DocumentStoreResource) -> dict:
    if not load_config().cold_storage.knowledge_graph_enabled:
        note = "knowledge graph disabled (cold_storage.knowledge_graph_enabled: false): skipped"
        context.log.info(note)
        context.add_output_metadata({"skipped": note})
        return {d: {"status": p.get("status", "failed"), "reason": p.get("reason"),
                    "skipped": note} for d, p in cold_store.items()}
    db = store.get_store()
    t0 = time.perf_counter()
    # every document's entities at once, on every core (the stage is mostly spaCy's NER)
    units = _readable_units(db, [d for d, p in cold_store.items() if p.get("status") == "ok"])
    extracted = map_documents(extract, {d: (u,) for d, u in units.items()},
                              {d: len(u) * NER_S_PER_REGION for d, u in units.items()})
    results = per_document(
        context, lambda doc_id, _: graph_for_document(
            db, doc_id, extracted[doc_id].result() if doc_id in extracted else None),
        cold_store)
    meta = summary_metadata(results)
    ok = [p for p in results.values() if p.get("status") == "ok"]
    meta.update({
        "edges": sum(p["edges"] for p in ok), "mentions": sum(p["mentions"] for p in ok),
        "entities_touched": sum(p["entities"] for p in ok),
        "rows_entities": db.count_rows(ENTITIES.name), "rows_edges": db.count_rows(EDGES.name),
        "seconds_total": round(time.perf_counter() - t0, 3),
        "sample_edges": MetadataValue.md(markdown_table([e for p in ok for e in p["sample"]])),
    })
    context.add_output_metadata(meta)
    return results


@asset_check(asset=knowledge_graph, blocking=True,
             description="Every relation edge has provenance: doc, page >= 1, bbox, sentence.")
def edges_have_provenance(store: DocumentStoreResource) -> AssetCheckResult:
    db = store.get_store()
    bad = db.rows(EDGES.name, "doc_id IS NULL OR page < 1 OR sentence IS NULL OR sentence = '' "
                  "OR bbox IS NULL", ["edge_id", "doc_id", "page", "relation"], limit=20)
    relations = db.count_rows(EDGES.name) and len(db.rows(
        EDGES.name, f"relation != {sql_str(MENTIONS)}", ["edge_id"]))
    return AssetCheckResult(
        passed=not bad, severity=AssetCheckSeverity.ERROR,
        metadata={"edges_without_provenance": len(bad), "relation_edges": int(relations or 0),
                  "examples": MetadataValue.md(markdown_table(bad) if bad else "(none)")})
