"""Stage 5: OCR of pages without a text layer (tesseract via layoutparser's TesseractAgent),
when `cold_storage.ocr_enabled` is true."""


from pathlib import Path

import numpy as np
import pymupdf
from dagster import AssetExecutionContext

from h3.assets._batch import per_document_on_workers, summary_metadata
from h3.assets._page_space import capped_dpi, clamp, from_pixels
from h3.assets.partitioning import document_asset
from h3.ontology.records import DocumentRecord, OcrPage, OcrParagraph, OcrRecord
from h3.resources.models.ocr import OcrResource, TesseractOcr

MIN_CONFIDENCE = 30.0  # tesseract word confidence (0-100) below which a paragraph is noise
OCR_S_PER_PAGE = 1.0  # tesseract on a 200-dpi page, one thread, roughly


def ocr_page(page: pymupdf.Page, ocr: TesseractOcr, dpi: int) -> list[OcrParagraph]:
    """Paragraphs of one page, boxes in PDF points of the unrotated page like every stored box.
    The page is read as displayed (rotated by its /Rotate)."""
    dpi = capped_dpi(page, dpi)
    pix = page.get_pixmap(dpi=dpi, colorspace=pymupdf.csRGB, alpha=False)
    image = np.frombuffer(pix.samples, dtype=np.uint8).reshape(pix.h, pix.w, 3)  # (H, W, 3)
    paragraphs = []
    for block in ocr.read(image):
        text = " ".join((block.text or "").split())
        score = float(block.score) if block.score is not None else 0.0
        if not text or score < MIN_CONFIDENCE:
            continue
        paragraphs.append(OcrParagraph(
            bbox=tuple(clamp(page, from_pixels(page, block.coordinates, dpi))), text=text,
            score=round(score, 1)))
    return paragraphs


def scanned_pages(doc: DocumentRecord) -> list[int]:
    """1-based numbers of the pages without a text layer."""
    return [i + 1 for i, has_text in enumerate(doc.text_pages) if not has_text]


def document_ocr(doc: DocumentRecord, languages: str | None, dpi: int) -> OcrRecord:
    """One document's OCR (`languages` None: OCR switched off). A document worker may run it
    (resources/document_workers.py): tesseract is a process of its own, one thread."""
    scanned = scanned_pages(doc)
    if not scanned or languages is None:
        return OcrRecord(source=doc.source, skipped_pages=tuple(scanned))
    engine = TesseractOcr(languages)  # languages without tesseract data: the document fails
    garbled = set(doc.garbled_pages)
    pages: list[OcrPage] = []
    errors: list[str] = [f"{doc.source}: {engine.note}"] if engine.note else []
    with pymupdf.open(Path(doc.source)) as pdf:
        for n in scanned:
            page = pdf[n - 1]
            if n not in garbled and not page.get_images() and not page.get_cdrawings():
                continue  # a blank page: nothing to read
            try:
                pages.append(OcrPage(page=n, paragraphs=tuple(ocr_page(page, engine, dpi)),
                                     languages=engine.last_languages))  # "auto": per page
            except Exception as exc:  # one unreadable page must not lose the document
                errors.append(f"page {n} of {doc.source}: OCR failed: {exc}")
    return OcrRecord(source=doc.source, ocr_pages=tuple(pages), errors=tuple(errors))


@document_asset(group_name="ingestion", kinds={"pdf", "tesseract"},
       description="Text recovered by tesseract from pages that have no text layer.")
def ocr(context: AssetExecutionContext, documents: dict, ocr_engine: OcrResource) -> dict:
    enabled = ocr_engine.is_enabled()
    languages = ocr_engine.language_setting() if enabled else None
    results = per_document_on_workers(
        context, document_ocr, (documents,), (DocumentRecord,),
        cost_s=lambda records: len(scanned_pages(records[0])) * OCR_S_PER_PAGE if enabled else 0.0,
        args_of=lambda _, records: (*records, languages, ocr_engine.dpi))
    for payload in results.values():
        for error in payload.get("errors") or ():
            context.log.warning(error)
    meta = summary_metadata(results, "ocr_pages", [
        {"doc_id": k, "page": p["page"], "paragraphs": len(p["paragraphs"]),
         "first": p["paragraphs"][0]["text"] if p["paragraphs"] else ""}
        for k, v in results.items() for p in (v.get("ocr_pages") or [])])
    meta["ocr_enabled"] = enabled
    context.add_output_metadata(meta)
    return results
