"""Finding PDFs and registering them as documents (a `pending` row + a Dagster partition).

Shared by `h3 index-build` and the inbox sensor, so both treat files the same way: unchanged
bytes are skipped, a changed file becomes a new document that replaces the old one when stored.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from h3.ontology.ids import content_hash, doc_id_for_bytes
from h3.resources.store import DocumentStore


@dataclass(frozen=True, slots=True)
class Registration:
    doc_id: str | None
    source: str  # the path as given
    path: str  # absolute path, what the store records
    state: str  # "new" | "retry" | "unchanged" | "failed"
    reason: str | None = None


def find_pdfs(paths: list[str]) -> tuple[list[Path], list[str]]:
    """(PDF files under the paths, sorted; paths that do not exist). A `.pdf` symlink whose
    target is gone is kept, so that it is reported as a file that cannot be read rather than
    silently skipped."""
    found: list[Path] = []
    missing: list[str] = []
    for given in paths:
        p = Path(given)
        if p.is_file():
            found.append(p)
        elif p.is_dir():
            found += sorted(f for f in p.rglob("*") if f.suffix.lower() == ".pdf"
                            and (f.is_file() or (f.is_symlink() and not f.exists())))
        else:
            missing.append(given)
    return list(dict.fromkeys(found)), missing


def printable(path: Path | str) -> str:
    """The path as UTF-8-safe text: bytes of a name in another encoding (which Python keeps as
    lone surrogates) shown as \\xNN escapes."""
    return str(path).encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def unusable_name(path: Path) -> str | None:
    """Why this file cannot be registered by name, or None. The store, the staging files and
    the JSON output hold paths as UTF-8 text; a name that is not UTF-8 (e.g. Latin-1 bytes
    from an old archive) would make every one of them fail, so the file is refused alone."""
    try:
        str(path.resolve()).encode("utf-8")
    except UnicodeEncodeError:
        return f"{printable(path)}: file name is not valid UTF-8; rename the file to ingest it"
    return None


def register(store: DocumentStore, path: Path, retry_failed: bool = True) -> Registration:
    """Registers one file. Unchanged (same bytes already stored ok) -> nothing is written; same
    bytes that failed before -> tried again only with `retry_failed` (the sensor passes False so
    it does not retry a bad file on every tick)."""
    bad_name = unusable_name(path)
    if bad_name:
        return Registration(None, printable(path), printable(path.resolve()), "failed", bad_name)
    absolute = str(path.resolve())
    try:
        data = path.read_bytes()
    except OSError as exc:
        return Registration(None, str(path), absolute, "failed",
                            f"{path}: cannot read: {exc.strerror or exc}")
    doc_id = doc_id_for_bytes(data)
    existing = store.get_document(doc_id)
    if existing is not None and existing.get("status") == "ok":
        return Registration(doc_id, str(path), absolute, "unchanged")
    if existing is not None and existing.get("status") == "failed" and not retry_failed:
        return Registration(doc_id, str(path), absolute, "failed", existing.get("reason"))
    store.upsert_document({
        "doc_id": doc_id, "source": absolute, "content_hash": content_hash(data),
        "status": "pending", "reason": None, "pages": None, "title": None,
        "metadata_json": "{}", "bytes": len(data), "updated_at": time.time()})
    return Registration(doc_id, str(path), absolute, "retry" if existing else "new")


def register_many(store: DocumentStore, paths: list[Path]) -> list[Registration]:
    """`register` for many files with three store operations in all (one read, one delete, one
    append) instead of three per file: each LanceDB write is a commit."""
    from h3.resources.store import sql_str

    read: list[tuple[Path, str, bytes | None, str | None]] = []
    for path in paths:
        bad_name = unusable_name(path)
        if bad_name:
            read.append((path, printable(path.resolve()), None, bad_name))
            continue
        try:
            read.append((path, str(path.resolve()), path.read_bytes(), None))
        except OSError as exc:
            read.append((path, str(path.resolve()), None,
                         f"{path}: cannot read: {exc.strerror or exc}"))
    ids = {doc_id_for_bytes(data) for _, _, data, _ in read if data is not None}
    existing = {r["doc_id"]: r for r in store.rows(
        "documents", f"doc_id IN ({', '.join(sql_str(i) for i in sorted(ids))})",
        ["doc_id", "status"])} if ids else {}
    out: list[Registration] = []
    pending: dict[str, dict] = {}
    for path, absolute, data, error in read:
        if data is None:
            out.append(Registration(None, printable(path), absolute, "failed", error))
            continue
        doc_id = doc_id_for_bytes(data)
        before = existing.get(doc_id)
        if before is not None and before["status"] == "ok":
            out.append(Registration(doc_id, str(path), absolute, "unchanged"))
            continue
        pending[doc_id] = {
            "doc_id": doc_id, "source": absolute, "content_hash": content_hash(data),
            "status": "pending", "reason": None, "pages": None, "title": None,
            "metadata_json": "{}", "bytes": len(data), "updated_at": time.time()}
        out.append(Registration(doc_id, str(path), absolute, "retry" if before else "new"))
    if pending:
        store.delete_where("documents",
                           f"doc_id IN ({', '.join(sql_str(i) for i in sorted(pending))})")
        store.add("documents", list(pending.values()))
    return out
