"""Bytes on disk of each part of H3_HOME, per stored page (`h3 stats`, `h3 bench --scenario disk`).

Parts: every LanceDB table on its own (`lancedb/chunks`, ...), the token vectors
(`semantic/tokens`) apart from the rest of `semantic` (PCA, pooler, document index), every
staging folder on its own (`staging/<asset>`), and the other top-level folders (`figures`, `kv`,
`dagster`, `models`, `key_basis`, ...). Each part is one of three kinds:
- "document": grows with the documents stored (tables, vectors, figures, staging, Dagster's
  event log) - what the disk budget per page is about;
- "document_kv": the documents' prefilled KV (`kv`, only after `--with-kv` or `h3 ask --doc`);
- "fixed": does not grow with the corpus (converted models, the key basis, and `semantic`'s
  corpus-level models: the token PCA, the chunk pooler, the document index at ~4 KB a document).
Only reads file sizes and the documents table; writes nothing.
"""

from __future__ import annotations

from pathlib import Path

FIXED_PARTS = ("models", "key_basis")
KV_PARTS = ("kv",)
SPLIT_FOLDERS = {"lancedb": None, "staging": None, "semantic": ("tokens",)}  # (None: every child)


def folder_bytes(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())


def part_kind(name: str) -> str:
    top = name.split("/", 1)[0]
    if top in FIXED_PARTS or name == "semantic (other)":
        return "fixed"
    return "document_kv" if top in KV_PARTS else "document"


def home_parts(home: Path) -> dict[str, int]:
    """part name -> bytes, for every part of `home` (module docstring), largest first."""
    parts: dict[str, int] = {}
    for entry in sorted(home.iterdir()) if home.is_dir() else []:
        if entry.name in SPLIT_FOLDERS and entry.is_dir():
            only = SPLIT_FOLDERS[entry.name]
            rest = 0
            for child in sorted(entry.iterdir()):
                if only is None or child.name in only:
                    name = child.name.removesuffix(".lance")
                    parts[f"{entry.name}/{name}"] = folder_bytes(child)
                else:
                    rest += folder_bytes(child)
            if rest:
                parts[f"{entry.name} (other)"] = rest
        elif entry.is_dir():
            parts[entry.name] = folder_bytes(entry)
        else:  # loose files (probes, locks)
            parts["(files)"] = parts.get("(files)", 0) + entry.stat().st_size
    return dict(sorted(parts.items(), key=lambda kv: -kv[1]))


def stored_pages_and_pdf_bytes(home: Path) -> tuple[int, int, int]:
    """(pages, PDF bytes, documents) of the ok documents of `home`'s store (0s without one)."""
    from h3.resources.store.lancedb_import import import_lancedb

    lancedb = import_lancedb()

    folder = home / "lancedb"
    if not (folder / "documents.lance").is_dir():
        return 0, 0, 0
    table = lancedb.connect(str(folder)).open_table("documents")
    rows = table.search().where("status = 'ok'").select(["pages", "bytes"]).limit(None)
    rows = rows.to_arrow().to_pylist()
    return (sum(int(r.get("pages") or 0) for r in rows),
            sum(int(r.get("bytes") or 0) for r in rows), len(rows))


def disk_report(home: Path) -> dict:
    """Bytes and bytes per page of each part, and the totals by kind, against the PDFs' bytes."""
    home = Path(home)
    parts = home_parts(home)
    pages, pdf_bytes, documents = stored_pages_and_pdf_bytes(home)
    rows = [{"part": name, "kind": part_kind(name), "bytes": size,
             "bytes_per_page": round(size / pages) if pages else None}
            for name, size in parts.items()]
    totals = {kind: sum(r["bytes"] for r in rows if r["kind"] == kind)
              for kind in ("document", "document_kv", "fixed")}
    return {"home": str(home), "documents_ok": documents, "pages": pages, "pdf_bytes": pdf_bytes,
            "parts": rows,
            "totals": totals,
            "document_bytes_per_page": round(totals["document"] / pages) if pages else None,
            # the issue's budget: H3_HOME without the documents' KV (and without the models,
            # which do not grow with the corpus) against the PDFs' own bytes
            "document_bytes_over_pdf_bytes": (round(totals["document"] / pdf_bytes, 2)
                                              if pdf_bytes else None)}
