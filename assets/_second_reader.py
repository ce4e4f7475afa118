"""A second PDF reader for files MuPDF opens with no pages (a damaged catalog or page tree that
its repair cannot rebuild, while other readers find the pages): pypdfium2 first, then pdfminer
(which falls back to scanning every object for pages). What it reads, at least the text layer
with each line at its place, is written as a plain PDF that the other stages open with MuPDF as
usual; layout, tables and figures of the original are not recovered."""

from __future__ import annotations

import io
import logging
from pathlib import Path

import pymupdf

# one line of text: (page width, page height, [(x0, top, size, text)])
Page = tuple[float, float, list[tuple[float, float, float, str]]]


log = logging.getLogger(__name__)


def read_pages(data: bytes, failures: list[str] | None = None
               ) -> tuple[list[Page], str] | None:
    """(pages, parser name) from the first reader that finds pages, or None. Each reader that
    fails is logged and, with `failures`, said there ("pypdfium2: PdfiumError: ...") for the
    document's warnings or its failure reason."""
    for name, reader in (("pypdfium2", _pdfium_pages), ("pdfminer", _pdfminer_pages)):
        try:
            pages = reader(data)
        # any error: these readers are the last resort for a file MuPDF finds no page in, and
        # a damaged file makes them raise anything; the next reader still gets its chance
        except Exception as exc:  # noqa: BLE001 - logged, and said in the document's warnings
            reason = f"{name}: {type(exc).__name__}: {exc}"
            log.warning("second reader failed: %s", reason)
            if failures is not None:
                failures.append(reason)
            continue
        if pages:
            return pages, name
    return None


def rebuild(pages: list[Page], target: Path) -> Path:
    """Writes the pages (same sizes, each text line at its place) as a new PDF at target."""
    target.parent.mkdir(parents=True, exist_ok=True)
    out = pymupdf.open()
    for width, height, lines in pages:
        page = out.new_page(width=width, height=height)
        for x0, top, size, text in lines:
            page.insert_text((x0, top + size), text, fontsize=max(4.0, min(size, 40.0)))
    out.save(target)
    out.close()
    return target


def _pdfium_pages(data: bytes) -> list[Page]:
    import pypdfium2 as pdfium

    doc = pdfium.PdfDocument(data)
    pages: list[Page] = []
    for page in doc:
        width, height = page.get_size()
        text = page.get_textpage().get_text_range()
        lines = [(36.0, 36.0 + 14.0 * i, 11.0, ln) for i, ln in enumerate(text.splitlines())
                 if ln.strip()]
        pages.append((width, height, lines))
    return pages


def _pdfminer_pages(data: bytes) -> list[Page]:
    from pdfminer.high_level import extract_pages
    from pdfminer.layout import LTTextContainer, LTTextLine

    logging.getLogger("pdfminer").setLevel(logging.ERROR)  # it narrates every repair
    pages: list[Page] = []
    for layout in extract_pages(io.BytesIO(data)):
        width, height = layout.width, layout.height
        lines = []
        for box in layout:
            if not isinstance(box, LTTextContainer):
                continue
            for line in box:
                if isinstance(line, LTTextLine) and line.get_text().strip():
                    lines.append((line.x0, height - line.y1, line.height,
                                  line.get_text().strip()))
        pages.append((width, height, lines))
    return pages
