"""Stage 4: figures. Boxes from the layout model, embedded raster images and clustered vector
drawings, de-duplicated (assets/_figure_boxes.py); each crop is saved as a PNG under
$H3_HOME/figures/<doc_id>/ with its caption (nearest caption block). A crop whose every pixel is
grey is written with one channel instead of three: it reads back as the same RGB pixels (what
CLIP reads) in about half the bytes (a third of the development filings' crops are grey)."""


import re
from dataclasses import replace
from pathlib import Path

import numpy as np
import pymupdf
from dagster import AssetExecutionContext

from h3.assets._batch import per_document_on_workers, summary_metadata
from h3.assets._figure_boxes import figure_boxes
from h3.assets._page_space import page_box, render_clip
from h3.assets.partitioning import document_asset
from h3.ontology.records import (
    DocumentRecord,
    FigureRecord,
    FiguresRecord,
    LayoutBlock,
    LayoutRecord,
    PageLayout,
    TablesRecord,
)
from h3_runtime.home import under_home

CROP_DPI = 110
FIGURES_S_PER_PAGE = 0.01  # finding and cropping a page's figures on one core, roughly
CAPTION_GAP = 60.0  # points between a figure and its caption
CAPTION_START = re.compile(r"^\s*(fig(ure)?\.?|image|chart|photo)\s*\d*", re.IGNORECASE)


def find_caption(box: list[float], blocks: tuple[LayoutBlock, ...]) -> str:
    """The caption block closest below (or else above) the figure, overlapping it horizontally."""
    best, best_gap = "", CAPTION_GAP
    for b in blocks:
        text = b.text or ""
        if b.type != "caption" and not CAPTION_START.match(text):
            continue
        if min(box[2], b.x_2) <= max(box[0], b.x_1):
            continue
        gap = b.y_1 - box[3] if b.y_1 >= box[3] - 2 else box[1] - b.y_2
        if -2 <= gap < best_gap:
            best, best_gap = text, gap
    return " ".join(best.split())


def save_crop(pix: pymupdf.Pixmap, path: Path) -> None:
    """Writes the crop as PNG: greyscale when R = G = B at every pixel (lossless), else as is."""
    if pix.n == 3 and not pix.alpha:
        rows = np.frombuffer(pix.samples, np.uint8).reshape(pix.height, pix.stride)
        rgb = rows[:, :pix.width * 3].reshape(pix.height, pix.width, 3)  # (H, W, 3)
        if (rgb[..., 0] == rgb[..., 1]).all() and (rgb[..., 1] == rgb[..., 2]).all():
            # built from the red channel itself, not converted: no colour management can shift it
            grey = np.ascontiguousarray(rgb[..., 0])  # (H, W)
            pix = pymupdf.Pixmap(pymupdf.csGRAY, pix.width, pix.height, grey.tobytes(), 0)
    pix.save(str(path))


def page_figures(page: pymupdf.Page, page_layout: PageLayout, out_dir: Path,
                 table_boxes: list[list[float]] | None = None) -> list[FigureRecord]:
    """Figures of one page: crops saved under `out_dir`; `table_boxes` (the tables stage's) keep
    table rulings from being taken for vector figures."""
    blocks = page_layout.blocks
    text_boxes = [list(b.bbox) for b in blocks]
    boxes = figure_boxes(page, page_layout.boxes_of("figure"), text_boxes, table_boxes or [])
    found = []
    for i, (box, origin) in enumerate(boxes):
        rect = pymupdf.Rect(box) & page_box(page)
        if rect.is_empty or (origin == "layout-model" and (rect.width < 20 or rect.height < 20)):
            continue
        out_dir.mkdir(parents=True, exist_ok=True)
        path = out_dir / f"p{page.number + 1}-f{i}.png"
        save_crop(page.get_pixmap(clip=render_clip(page, rect), dpi=CROP_DPI), path)
        found.append(FigureRecord(
            page=page.number + 1, bbox=tuple(round(v, 2) for v in rect),
            image_path=str(path), caption=find_caption(box, blocks),
            origin="layout-model" if origin == "layout-model" else "pymupdf",
            text=" ".join(page.get_text("text", clip=rect).split())[:1000],
        ))
    return found


def document_figures(doc: DocumentRecord, lay: LayoutRecord, tab: TablesRecord,
                     out_dir: Path) -> FiguresRecord:
    """One document's figures, crops saved under `out_dir` (a document worker may run it:
    resources/document_workers.py)."""
    table_boxes: dict[int, list] = {}
    for t in tab.tables:
        table_boxes.setdefault(t.page, []).append(list(t.bbox))
    with pymupdf.open(Path(doc.source)) as pdf:
        found = [f for p in lay.layout
                 for f in page_figures(pdf[p.page - 1], p, out_dir, table_boxes.get(p.page, []))]
    garbled = set(doc.garbled_pages)
    # the text inside a figure on an unreadable page is glyph garbage
    found = [replace(f, text="") if f.page in garbled else f for f in found]
    return FiguresRecord(source=doc.source, figures=tuple(found))


@document_asset(group_name="ingestion", kinds={"pdf"},
       description="Figure crops (PNG under $H3_HOME/figures) with bbox and caption.")
def figures(context: AssetExecutionContext, documents: dict, layout: dict, tables: dict) -> dict:
    results = per_document_on_workers(
        context, document_figures, (documents, layout, tables),
        (DocumentRecord, LayoutRecord, TablesRecord),
        cost_s=lambda records: records[1].pages * FIGURES_S_PER_PAGE,
        # the crops' folder is named here: a worker keeps the H3_HOME it was started with
        args_of=lambda doc_id, records: (*records, under_home("figures", doc_id)))
    preview = [{"doc_id": k, "page": f["page"], "caption": f["caption"] or "(none)",
                "png": Path(f["image_path"]).name}
               for k, v in results.items() for f in (v.get("figures") or [])]
    context.add_output_metadata(summary_metadata(results, "figures", preview))
    return results
