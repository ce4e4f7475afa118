"""Stage 1: open each registered PDF, check it, and record page count, hash, title, metadata,
which pages have a readable text layer, and warnings (a repaired file, unreadable text)."""


import re
import unicodedata
from pathlib import Path

import pymupdf
from dagster import AssetExecutionContext

from h3.assets._batch import (
    DocumentError,
    per_document,
    summary_metadata,
    tag_run_with_files,
)
from h3.assets._page_space import page_box
from h3.assets._second_reader import read_pages, rebuild
from h3.assets.partitioning import document_asset
from h3.ontology.ids import content_hash, doc_id_for_bytes
from h3.ontology.records import DocumentRecord
from h3.resources.nlp.issuer import PROFILE_PAGES, profile_open_document
from h3.resources.settings import load_config
from h3.resources.store import DocumentStoreResource
from h3_runtime.home import under_home

MIN_TEXT_CHARS = 16  # fewer extractable characters than this: the page has no text layer
# A text layer can be unreadable: fonts without a Unicode map extract as U+FFFD, private-use or
# control codes, "(cid:N)", or symbol soup. Such a page is treated as scanned (OCR), never chunked
# as garbage. Thresholds leave room for real pages: a table of contents is mostly dot leaders
# (letters+digits ~25%), a formula page mostly symbols, but neither has undecodable glyphs.
MAX_UNDECODED_SHARE = 0.3  # U+FFFD / private-use / unassigned / control / (cid:N)
MIN_ALNUM_SHARE = 0.1  # letters and digits of any script
_CID = re.compile(r"\(cid:\d+\)")
_UNDECODED = ("Co", "Cn", "Cc", "Cs")


def unreadable(text: str) -> bool:
    """Whether extracted text is glyph garbage rather than words (see MAX_UNDECODED_SHARE)."""
    chars = [c for c in _CID.sub("\ufffd", text) if not c.isspace()]
    if not chars:
        return False
    undecoded = sum(c == "\ufffd" or unicodedata.category(c) in _UNDECODED for c in chars)
    alnum = sum(c.isalnum() for c in chars)
    return undecoded > MAX_UNDECODED_SHARE * len(chars) or alnum < MIN_ALNUM_SHARE * len(chars)


def cut_in_xref_table(data: bytes) -> bool:
    """Whether a file without %%EOF was cut inside the classic cross-reference table that
    follows its last object (a download stopped a few bytes short): every object is whole and
    a reader rebuilds the table by scanning them, so nothing of the content is lost. A file cut
    inside an object or a stream is not."""
    last = data.rfind(b"endobj")
    tail = data[last + 6:] if last >= 0 else b""
    return bool(tail) and b"xref" in tail and b"obj" not in tail and b"stream" not in tail


def check_bytes(data: bytes, name: str) -> list[str]:
    """The checks that need no parser (empty, not a PDF, truncated); raises DocumentError, or
    returns warnings. `h3 index-build` runs them before launching a run (cheap: no parsing)."""
    if not data:
        raise DocumentError(f"{name}: empty file (0 bytes)")
    warnings: list[str] = []
    # readers accept the header anywhere in the first 1024 bytes (mail or download headers
    # before it are common); MuPDF does too
    if b"%PDF-" not in data[:1024]:
        raise DocumentError(f"{name}: not a PDF (starts with {data[:8]!r})")
    if not data.lstrip().startswith(b"%PDF-"):
        warnings.append(f"{name}: {data.index(b'%PDF-')} bytes before the %PDF header ignored")
    eof = data.rfind(b"%%EOF")
    if eof < 0 and cut_in_xref_table(data):
        warnings.append(f"{name}: truncated inside its cross-reference table (no %%EOF): every "
                        "object is whole, the reader rebuilds the table")
    elif eof < 0 or b"obj" in data[eof:]:  # cut off, or cut inside an appended update
        raise DocumentError(f"{name}: truncated PDF (no %%EOF marker at the end of the file)")
    if eof >= 0 and data[eof + 5:].strip(b"\r\n\t \0"):
        warnings.append(f"{name}: {len(data) - eof - 5} bytes of junk after %%EOF ignored")
    return warnings


def inspect_pdf(path: Path, expected_doc_id: str | None = None) -> DocumentRecord:
    """Checks one PDF and describes it; raises DocumentError naming the file and the cause."""
    name = str(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise DocumentError(f"{name}: cannot read: {exc.strerror or exc}") from exc
    if expected_doc_id and doc_id_for_bytes(data) != expected_doc_id:
        raise DocumentError(f"{name}: changed since it was registered; run index-build again")
    warnings = check_bytes(data, name)
    pymupdf.TOOLS.mupdf_warnings(reset=True)
    try:
        doc = pymupdf.open(stream=data, filetype="pdf")
    except Exception as exc:
        raise DocumentError(f"{name}: cannot be opened as a PDF: {exc}") from exc
    parsed = name  # what the later stages open: the file, or its rebuild by a second reader
    if not doc.needs_pass and doc.page_count == 0:  # MuPDF found no page: ask another reader
        doc, parsed = _second_reading(data, name, doc, expected_doc_id, warnings)
    with doc:
        if doc.needs_pass:
            raise DocumentError(f"{name}: encrypted, no password given")
        if doc.page_count == 0:
            raise DocumentError(f"{name}: the PDF has no pages")
        text_pages: list[bool] = []
        garbled: list[int] = []
        sizes: list[tuple[float, float]] = []
        first_lines: list[str] = []
        # the first pages' text the profile reads: issuer, form, period (issues 11 and 35)
        cover: list[str] = []
        for index, page in enumerate(doc):
            try:
                text = page.get_text("text")
            except Exception as exc:
                raise DocumentError(f"page {index + 1} of {name}: unreadable: {exc}") from exc
            has_text = len(text.strip()) >= MIN_TEXT_CHARS
            if has_text and unreadable(text):
                garbled.append(index + 1)
                has_text = False
            text_pages.append(has_text)
            if index < PROFILE_PAGES:
                cover.append(text if has_text else "")
            box = page_box(page)  # the space every stored bbox is in (unrotated)
            sizes.append((round(box.width, 2), round(box.height, 2)))
            if not first_lines and has_text:
                first_lines = [ln.strip() for ln in text.splitlines() if ln.strip()][:1]
        if garbled:
            warnings.append(f"{name}: unreadable text layer (glyphs without Unicode) on pages "
                            f"{_ranges(garbled)}: treated as scanned pages (OCR)")
        if doc.is_repaired:  # MuPDF rebuilt a damaged file: pages or text may be missing
            cause = pymupdf.TOOLS.mupdf_warnings(reset=True).split("\n")[0]
            warnings.append(f"{name}: damaged PDF repaired by MuPDF ({cause}); "
                            "content may be incomplete")
        metadata = {k: v for k, v in (doc.metadata or {}).items() if v}
        title = (metadata.get("title") or (first_lines[0] if first_lines else path.stem))[:200]
        return DocumentRecord(
            source=parsed, pages=doc.page_count, title=title, metadata=metadata,
            content_hash=content_hash(data), bytes=len(data), text_pages=tuple(text_pages),
            page_sizes=tuple(sizes), repaired=bool(doc.is_repaired),
            garbled_pages=tuple(garbled), warnings=tuple(warnings),
            # (a first page without legible text is read by OCR for the profile)
            profile=profile_open_document(
                doc, pages=cover, ocr=load_config().cold_storage.ocr_enabled).to_json(),
        )


def _second_reading(data: bytes, name: str, doc, doc_id: str | None,
                    warnings: list[str]) -> tuple:
    """MuPDF read no page: the pages another reader finds (text layer), rebuilt as a plain PDF
    under $H3_HOME/staging/rebuilt that the later stages open instead; or the same empty doc."""
    failures: list[str] = []
    found = read_pages(data, failures)
    if found is None:
        if failures:  # what the other readers said, rather than a bare "no pages"
            doc.close()
            raise DocumentError(f"{name}: the PDF has no pages (MuPDF reads none; "
                                f"{'; '.join(failures)})")
        return doc, name
    pages, parser = found
    doc.close()
    target = under_home("staging", "rebuilt", f"{doc_id or doc_id_for_bytes(data)}.pdf")
    warnings.append(f"{name}: MuPDF reads no page (damaged catalog or page tree); "
                    f"{len(pages)} pages read with {parser}, text layer only (layout, tables "
                    "and figures not recovered)"
                    + (f"; before it, {'; '.join(failures)}" if failures else ""))
    return pymupdf.open(rebuild(pages, target)), str(target)


def _ranges(pages: list[int]) -> str:
    """[1, 2, 3, 7] -> "1-3, 7"."""
    spans: list[list[int]] = []
    for n in pages:
        if spans and n == spans[-1][1] + 1:
            spans[-1][1] = n
        else:
            spans.append([n, n])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in spans)


@document_asset(group_name="ingestion", kinds={"pdf"},
       description="Each registered PDF checked and described: pages, hash, title, metadata, "
                   "which pages have a text layer. Bad files fail alone with a reason (shown "
                   "Failed in ingested_documents, the run's last step).")
def documents(context: AssetExecutionContext, store: DocumentStoreResource) -> dict:
    db = store.get_store()

    sources: dict[str, str | None] = {}

    def one(doc_id: str) -> DocumentRecord:
        row = db.get_document(doc_id)
        sources[doc_id] = (row or {}).get("source")
        if row is None or not row.get("source"):
            raise DocumentError(f"{doc_id}: not registered (use h3 index-build or the inbox "
                                "sensor)")
        return inspect_pdf(Path(row["source"]), doc_id)

    results = per_document(context, one)
    tag_run_with_files(context, [sources.get(k) or k for k in results])
    preview = [{"doc_id": k, "source": v.get("source"), "pages": v.get("pages"),
                "title": v.get("title"), "status": v["status"]} for k, v in results.items()]
    context.add_output_metadata(summary_metadata(results, preview=preview))
    return results
