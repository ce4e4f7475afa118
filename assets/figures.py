"""Stage 4: figures. Boxes from the layout model and large embedded images, merged; each crop is
saved as a PNG under $H3_HOME/figures/<doc_id>/ with its caption (nearest caption block)."""


import re
from pathlib import Path

import pymupdf
from dagster import AssetExecutionContext, BackfillPolicy, asset

from assets._batch import Payload, per_document, summary_metadata
from assets.partitioning import DOCUMENTS_PARTITIONS
from h3_runtime.home import under_home

CROP_DPI = 110
CAPTION_GAP = 60.0  # points between a figure and its caption
CAPTION_START = re.compile(r"^\s*(fig(ure)?\.?|image|chart|photo)\s*\d*", re.IGNORECASE)


def _merge(boxes: list[list[float]]) -> list[list[float]]:
    """Unions boxes that overlap (a model box and the image under it are one figure)."""
    merged: list[list[float]] = []
    for box in sorted(boxes, key=lambda b: (b[1], b[0])):
        for m in merged:
            if min(m[2], box[2]) > max(m[0], box[0]) and min(m[3], box[3]) > max(m[1], box[1]):
                m[:] = [min(m[0], box[0]), min(m[1], box[1]), max(m[2], box[2]),
                        max(m[3], box[3])]
                break
        else:
            merged.append(list(box))
    return merged


def find_caption(box: list[float], blocks: list[dict]) -> str:
    """The caption block closest below (or else above) the figure, overlapping it horizontally."""
    best, best_gap = "", CAPTION_GAP
    for b in blocks:
        text = b.get("text") or ""
        if b["type"] != "caption" and not CAPTION_START.match(text):
            continue
        if min(box[2], b["x_2"]) <= max(box[0], b["x_1"]):
            continue
        gap = b["y_1"] - box[3] if b["y_1"] >= box[3] - 2 else box[1] - b["y_2"]
        if -2 <= gap < best_gap:
            best, best_gap = text, gap
    return " ".join(best.split())


def page_figures(page: pymupdf.Page, page_layout: dict, out_dir: Path) -> list[dict]:
    boxes = [[b["x_1"], b["y_1"], b["x_2"], b["y_2"]]
             for b in page_layout["detections"]["blocks"] if b["type"] == "figure"]
    boxes += [list(b) for b in page_layout["images"]]
    found = []
    for i, box in enumerate(_merge(boxes)):
        rect = pymupdf.Rect(box) & page.rect
        if rect.is_empty or rect.width < 20 or rect.height < 20:
            continue
        out_dir.mkdir(parents=True, exist_ok=True)
        path = out_dir / f"p{page.number + 1}-f{i}.png"
        page.get_pixmap(clip=rect, dpi=CROP_DPI).save(str(path))
        found.append({
            "page": page.number + 1, "bbox": [round(v, 2) for v in rect],
            "image_path": str(path), "caption": find_caption(box, page_layout["blocks"]["blocks"]),
            "text": " ".join(page.get_text("text", clip=rect).split())[:1000],
        })
    return found


@asset(partitions_def=DOCUMENTS_PARTITIONS, group_name="figures", io_manager_key="staging_io",
       backfill_policy=BackfillPolicy.single_run(),
       description="Figure crops (PNG under $H3_HOME/figures) with bbox and caption.")
def figures(context: AssetExecutionContext, documents: dict, layout: dict) -> dict:
    def one(doc_id: str, doc: Payload, lay: Payload) -> Payload:
        out_dir = under_home("figures", doc_id)
        with pymupdf.open(Path(doc["source"])) as pdf:
            found = [f for p in lay["layout"] for f in page_figures(pdf[p["page"] - 1], p, out_dir)]
        return {"source": doc["source"], "figures": found}

    results = per_document(context, one, documents, layout)
    preview = [{"doc_id": k, "page": f["page"], "caption": f["caption"] or "(none)",
                "png": Path(f["image_path"]).name}
               for k, v in results.items() for f in (v.get("figures") or [])]
    context.add_output_metadata(summary_metadata(results, "figures", preview))
    return results
