"""Stage 1: open each registered PDF, check it, and record page count, hash, title, metadata."""


from pathlib import Path

import pymupdf
from dagster import AssetExecutionContext, BackfillPolicy, asset

from assets._batch import DocumentError, Payload, per_document, summary_metadata
from assets.partitioning import DOCUMENTS_PARTITIONS
from ontology.ids import content_hash, doc_id_for_bytes
from resources.store import ColdStoreResource

MIN_TEXT_CHARS = 16  # fewer extractable characters than this: the page has no text layer


def inspect_pdf(path: Path, expected_doc_id: str | None = None) -> Payload:
    """Checks one PDF and describes it; raises DocumentError naming the file and the cause."""
    name = str(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise DocumentError(f"{name}: cannot read: {exc.strerror or exc}") from exc
    if expected_doc_id and doc_id_for_bytes(data) != expected_doc_id:
        raise DocumentError(f"{name}: changed since it was registered; run index-build again")
    if not data:
        raise DocumentError(f"{name}: empty file (0 bytes)")
    if not data.lstrip()[:5] == b"%PDF-":
        raise DocumentError(f"{name}: not a PDF (starts with {data[:8]!r})")
    if b"%%EOF" not in data[-2048:]:
        raise DocumentError(f"{name}: truncated PDF (no %%EOF marker at the end of the file)")
    try:
        doc = pymupdf.open(stream=data, filetype="pdf")
    except Exception as exc:
        raise DocumentError(f"{name}: cannot be opened as a PDF: {exc}") from exc
    with doc:
        if doc.needs_pass:
            raise DocumentError(f"{name}: encrypted, no password given")
        if doc.page_count == 0:
            raise DocumentError(f"{name}: the PDF has no pages")
        text_pages: list[bool] = []
        sizes: list[list[float]] = []
        first_lines: list[str] = []
        for index, page in enumerate(doc):
            try:
                text = page.get_text("text")
            except Exception as exc:
                raise DocumentError(f"page {index + 1} of {name}: unreadable: {exc}") from exc
            text_pages.append(len(text.strip()) >= MIN_TEXT_CHARS)
            sizes.append([round(page.rect.width, 2), round(page.rect.height, 2)])
            if not first_lines:
                first_lines = [ln.strip() for ln in text.splitlines() if ln.strip()][:1]
        metadata = {k: v for k, v in (doc.metadata or {}).items() if v}
        title = (metadata.get("title") or (first_lines[0] if first_lines else path.stem))[:200]
        return {
            "status": "ok", "reason": None, "source": name, "pages": doc.page_count,
            "title": title, "metadata": metadata, "content_hash": content_hash(data),
            "bytes": len(data), "text_pages": text_pages, "page_sizes": sizes,
            "repaired": bool(doc.is_repaired),
        }


@asset(partitions_def=DOCUMENTS_PARTITIONS, group_name="documents", io_manager_key="staging_io",
       backfill_policy=BackfillPolicy.single_run(),
       description="Each registered PDF checked and described: pages, hash, title, metadata, "
                   "which pages have a text layer. Bad files fail alone with a reason.")
def documents(context: AssetExecutionContext, store: ColdStoreResource) -> dict:
    db = store.get_store()

    def one(doc_id: str) -> Payload:
        row = db.get_document(doc_id)
        if row is None or not row.get("source"):
            raise DocumentError(f"{doc_id}: not registered (use h3 index-build or the inbox "
                                "sensor)")
        return inspect_pdf(Path(row["source"]), doc_id)

    results = per_document(context, one)
    preview = [{"doc_id": k, "source": v.get("source"), "pages": v.get("pages"),
                "title": v.get("title"), "status": v["status"]} for k, v in results.items()]
    context.add_output_metadata(summary_metadata(results, preview=preview))
    return results
