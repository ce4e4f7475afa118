"""A document's tree in the document store (`sections` table), and which document a name means.

A store ingested before the `sections` stage has no rows for a document: its tree is then built
from its stored chunks (and its PDF's outline, when the file is still there) on the fly, and
`DocumentTree.origin_note` says so; nothing is written, so a read-only store navigates too.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass
from pathlib import Path

from h3.ontology.ids import doc_id_of_partition
from h3.ontology.sections import Section
from h3.resources.navigation.tree import build_tree, chunk_order, read_outline
from h3.resources.store import DocumentStore, sql_str
from h3.resources.store.tables import SECTIONS

CHUNK_COLUMNS = ["chunk_id", "page", "bbox", "text", "kind", "section", "token_count", "vector"]
BUILT_NOTE = ("the store has no section tree for this document (ingested before the sections "
              "stage): built from its stored chunks")


@dataclass(slots=True)
class DocumentTree:
    doc_id: str
    source: str
    sections: list[Section]  # top sections, each followed by its parts
    chunks: list[dict]  # the document's chunk rows in reading order (CHUNK_COLUMNS)
    stored: bool  # read from the `sections` table (else built now)

    @property
    def origin_note(self) -> str | None:
        return None if self.stored else BUILT_NOTE


def resolve_document(db: DocumentStore, ref: str) -> dict:
    """The stored `documents` row a user's DOC names: its doc id, its partition key
    (`report.pdf-<doc_id>`), its file name or path. Raises LookupError naming `ref` when none
    or several ok documents match, or the document did not ingest."""
    doc_id = ref
    with contextlib.suppress(ValueError):
        doc_id = doc_id_of_partition(ref)
    doc = db.get_document(doc_id)
    if doc is None:
        name = Path(ref).name
        found = [d for d in db.rows("documents", None, ["doc_id", "source", "status"])
                 if Path(d.get("source") or "").name == name]
        ok = [d for d in found if d.get("status") == "ok"]
        if len(ok) > 1:
            ids = ", ".join(d["doc_id"] for d in ok)
            raise LookupError(f"document {ref}: {len(ok)} stored documents have this file name "
                              f"({ids}): give the doc id")
        doc = db.get_document((ok or found)[0]["doc_id"]) if (ok or found) else None
    if doc is None:
        raise LookupError(f"document {ref}: not in the store (see `h3 list`)")
    if doc.get("status") != "ok":
        raise LookupError(f"document {ref}: status {doc.get('status')} (see `h3 list`)")
    return doc


def chunk_rows(db: DocumentStore, doc_id: str) -> list[dict]:
    rows = db.rows("chunks", f"doc_id = {sql_str(doc_id)}", CHUNK_COLUMNS)
    return sorted(rows, key=lambda r: chunk_order(r["chunk_id"]))


def stored_sections(db: DocumentStore, doc_id: str) -> list[Section]:
    rows = db.rows(SECTIONS.name, f"doc_id = {sql_str(doc_id)}")
    out = [Section(doc_id=doc_id, section_id=r["section_id"], level=int(r["level"]),
                   title=r["title"], page_start=int(r["page_start"]),
                   page_end=int(r["page_end"]), parent_id=r["parent_id"] or "",
                   chunk_ids=tuple(r["chunk_ids"] or ()), tokens=int(r["tokens"] or 0),
                   origin=r["origin"], summary=r["summary"] or "",
                   vector=tuple(r["vector"] or ())) for r in rows]

    def order(s: Section) -> tuple[int, ...]:
        return tuple(int(x) for x in s.section_id[1:].split("."))

    # s3 before s3.1 before s3.2 before s4
    return sorted(out, key=lambda s: (*order(s)[:1], 0 if s.level == 1 else order(s)[1]))


def build_for(db: DocumentStore, doc: dict, rows: list[dict] | None = None) -> list[Section]:
    """The tree of a stored document from its chunks and its PDF's outline (if the file is
    readable); writes nothing."""
    rows = chunk_rows(db, doc["doc_id"]) if rows is None else rows
    if not rows:
        raise LookupError(f"document {doc['doc_id']}: it has no text chunks")
    source = doc.get("source") or ""
    toc = read_outline(source) if source and Path(source).is_file() else []
    return build_tree(doc["doc_id"], rows, toc)


def document_tree(db: DocumentStore, ref: str) -> DocumentTree:
    """The tree and chunks of the document `ref` names (resolve_document): stored, or built
    from its chunks when the store has none for it."""
    doc = resolve_document(db, ref)
    rows = chunk_rows(db, doc["doc_id"])
    if not rows:
        raise LookupError(f"document {ref}: it has no text chunks")
    sections = stored_sections(db, doc["doc_id"])
    stored = bool(sections)
    if not stored:
        sections = build_for(db, doc, rows)
    return DocumentTree(doc["doc_id"], doc.get("source") or "", sections, rows, stored)


def save_sections(db: DocumentStore, doc_id: str, sections: list[Section]) -> int:
    """Replaces the document's rows in `sections` with this tree; returns the rows written."""
    now = time.time()
    db.delete_where(SECTIONS.name, f"doc_id = {sql_str(doc_id)}")
    return db.add(SECTIONS.name, [{
        "doc_id": doc_id, "section_id": s.section_id, "parent_id": s.parent_id,
        "level": s.level, "title": s.title, "page_start": s.page_start,
        "page_end": s.page_end, "chunk_ids": list(s.chunk_ids), "tokens": s.tokens,
        "origin": s.origin, "summary": s.summary, "vector": list(s.vector),
        "created_at": now} for s in sections])
