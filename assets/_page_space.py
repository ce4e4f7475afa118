"""One coordinate space for every box H³ stores: PDF points of the *unrotated* page, origin
top-left, the space PyMuPDF's text extraction, `search_for`, drawings and image info use.

A page with /Rotate renders rotated: pixmaps (and so the layout model's and tesseract's boxes)
live in the rotated space, and `page.rect` is the rotated page. Converting those here keeps
text blocks, model boxes, OCR paragraphs and figure crops in one space on rotated pages (on an
unrotated page every function below is the identity)."""

from __future__ import annotations

import math

import pymupdf

# A render larger than this is made at a lower resolution: a poster or a 5000-point page at OCR's
# 200 dpi would be ~190 Mpx (~0.6 GB RGB before tesseract's own copies).
MAX_RENDER_PIXELS = 40_000_000


def page_box(page: pymupdf.Page) -> pymupdf.Rect:
    """The page in stored coordinates (unrotated width x height; `page.rect` when not rotated)."""
    return pymupdf.Rect(page.rect * page.derotation_matrix)


def from_pixels(page: pymupdf.Page, box, dpi: float) -> list[float]:
    """A box in pixels of `page.get_pixmap(dpi=dpi)` -> stored coordinates (points)."""
    scale = 72.0 / dpi
    rect = pymupdf.Rect(*(v * scale for v in box)) * page.derotation_matrix
    return list(rect)


def capped_dpi(page: pymupdf.Page, dpi: int, max_pixels: int = MAX_RENDER_PIXELS) -> int:
    """`dpi`, lowered where needed so that a render of the whole page has <= max_pixels
    (an int: PyMuPDF stores the resolution in the pixmap as one)."""
    pixels = page.rect.width * page.rect.height * (dpi / 72.0) ** 2
    return dpi if pixels <= max_pixels else max(1, int(dpi * math.sqrt(max_pixels / pixels)))


def render_clip(page: pymupdf.Page, box) -> pymupdf.Rect:
    """A stored-coordinate box -> the `clip=` that renders that area with `get_pixmap`."""
    return pymupdf.Rect(box) * page.rotation_matrix


def clamp(page: pymupdf.Page, box) -> list[float]:
    """The box cut to the page (text drawn off the page edge has boxes beyond it)."""
    return [round(v, 2) for v in pymupdf.Rect(box) & page_box(page)]
