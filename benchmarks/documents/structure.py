"""`h3 bench --scenario structure`: structural recall on the docling test PDFs, and the time
the semantic stages add to ingestion (ingestion with and without them, side by side).

Ground truth: docling's own tables and pictures (groundtruth/*.json; agreement with another
tool, not human labels). Each item becomes one query: its kind ("table"/"figure") plus its
caption, or, with no caption, the text docling places nearest to it on the page. A query is a
hit when one of its top-5 `via: structure` results lies on the same page of the same file and
overlaps docling's box with IoU >= 0.5 (docling's boxes are converted from bottom-left to our
top-left origin). `detectable` counts the items our ingestion found as a region at all
(IoU >= 0.5): the ceiling for recall, owned by layout detection.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

from benchmarks.documents.semantic_ingest import ingest_side_by_side, warm_all
from h3.ontology.boxes import iou
from h3.pipelines.instance import h3_home_env

REPO = Path(__file__).resolve().parents[2]
DOCLING = REPO.parent / "shared" / "corpora" / "docling-tests"
QUICK = ["2305.03393v1-pg9.pdf", "amt_handbook_sample.pdf", "picture_classification.pdf",
         "normal_4pages.pdf"]
IOU_MIN = 0.5


def top_left(bbox: dict, page_height: float) -> list[float]:
    """docling's {l, t, r, b, coord_origin} -> [x0, y0, x1, y1] with a top-left origin."""
    if bbox.get("coord_origin", "BOTTOMLEFT").upper() == "BOTTOMLEFT":
        return [bbox["l"], page_height - bbox["t"], bbox["r"], page_height - bbox["b"]]
    return [bbox["l"], bbox["t"], bbox["r"], bbox["b"]]


def _resolve(doc: dict, ref: str) -> dict:
    _, group, index = ref.split("/")
    return doc[group][int(index)]


def ground_truth(json_path: Path) -> list[dict]:
    """Tables (label "table") and pictures of one docling document, with a query each."""
    if not json_path.exists():  # skipped_2pages.pdf has no reference
        return []
    doc = json.loads(json_path.read_text())
    heights = {int(k): v["size"]["height"] for k, v in doc.get("pages", {}).items()}
    texts = [t for t in doc.get("texts", []) if t.get("prov") and t.get("text")]
    items = []
    for group, kind in (("tables", "table"), ("pictures", "figure")):
        for item in doc.get(group, []):
            if item.get("label") not in ("table", "picture") or not item.get("prov"):
                continue
            prov = item["prov"][0]
            page = int(prov["page_no"])
            box = top_left(prov["bbox"], heights.get(page, 792.0))
            caption = " ".join(_resolve(doc, c["$ref"]).get("text", "")
                               for c in item.get("captions", [])).strip()
            if not caption:  # the nearest text on the same page describes it
                near = sorted((t for t in texts if t["prov"][0]["page_no"] == page),
                              key=lambda t: abs(top_left(t["prov"][0]["bbox"],
                                                         heights.get(page, 792.0))[1] - box[3]))
                caption = near[0]["text"] if near else ""
            words = caption.split()[:20]
            items.append({"file": json_path.stem + ".pdf", "kind": kind, "page": page,
                          "bbox": box, "query": f"{kind} {' '.join(words)}".strip(),
                          "has_caption": bool(item.get("captions"))})
    return items


def evaluate(home: Path, items: list[dict], k: int = 5) -> dict:
    from h3.resources.recall.router import make_context, recall
    from h3.resources.store import open_store

    with h3_home_env(home):
        store = open_store()
        ctx = make_context(store)
        by_file = {Path(s).name: d for d, s in ctx.doc_sources.items()}
        regions = store.rows("structures", None, ["doc_id", "page", "kind", "bbox"])
        results = recall(store, [i["query"] for i in items], k=k, mode="auto", ctx=ctx)
    rows, hits, detectable = [], 0, 0
    for item, res in zip(items, results, strict=True):
        doc_id = by_file.get(item["file"])
        candidates = [r for r in regions if r["doc_id"] == doc_id and r["page"] == item["page"]]
        best_region = max((iou(r["bbox"], item["bbox"]) for r in candidates), default=0.0)
        detectable += best_region >= IOU_MIN
        rank = next((n for n, h in enumerate(res["hits"], 1)
                     if h["via"] == "structure" and h["doc_id"] == doc_id
                     and h["page"] == item["page"] and iou(h["bbox"], item["bbox"]) >= IOU_MIN),
                    None)
        hits += rank is not None
        rows.append({"file": item["file"], "kind": item["kind"], "page": item["page"],
                     "query": item["query"][:80], "rank": rank, "intent": res["intent"],
                     "best_region_iou": round(best_region, 3),
                     "why_missed": None if rank else (
                         "not detected as a region by ingestion (layout)" if best_region < IOU_MIN
                         else "detected but ranked below top-5")})
    n = len(items)
    by_kind = {}
    for kind in ("table", "figure"):
        sel = [r for r in rows if r["kind"] == kind]
        if sel:
            by_kind[kind] = {"items": len(sel),
                             "recall_at_5": round(sum(r["rank"] is not None for r in sel)
                                                  / len(sel), 3)}
    return {"items": n, f"recall_at_{k}": round(hits / n, 3) if n else None,
            "detectable": detectable,
            "recall_at_5_of_detectable": round(hits / detectable, 3) if detectable else None,
            "by_kind": by_kind, "per_item": rows}


def run(out_dir: Path, quick: bool) -> dict:
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="h3-bench-structure-"))
    try:
        corpus = work / "corpus"
        corpus.mkdir()
        for pdf in sorted((DOCLING / "pdf").glob("*.pdf")):
            if not quick or pdf.name in QUICK:
                shutil.copy(pdf, corpus / pdf.name)
        load_s = warm_all()
        timing = ingest_side_by_side(work, corpus)
        items = [i for p in sorted(corpus.glob("*.pdf"))
                 for i in ground_truth(DOCLING / "groundtruth" / f"{p.stem}.json")]
        quality = evaluate(Path(timing["home"]), items)
        timing.pop("home")
        result = {"files": len(list(corpus.glob("*.pdf"))), "model_load_s": round(load_s, 2),
                  "structural_recall": quality, "ingestion_overhead": timing}
        result["targets"] = {
            "structural_recall_at_5_ge_0.9": (quality["recall_at_5"] or 0) >= 0.9,
            "semantic_stages_add_le_50pct": (timing["added_fraction"] or 9) <= 0.5,
        }
        (out_dir / "structure_misses.json").write_text(json.dumps(
            [r for r in quality["per_item"] if r["rank"] is None], indent=2))
        return result
    finally:
        shutil.rmtree(work, ignore_errors=True)
