"""Writes the synthetic company-news articles (tests/fixtures/kg/company_news*.json) as small
PDFs, one article per file: a title and one paragraph per sentence, so relation recall is
measured through the real ingestion path (layout, regions, chunks) rather than on raw strings.

    python -m pipelines.bench.news_corpus OUT_DIR [company_news.json ...]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

KG_FIXTURES = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "kg"


def write_article(doc: dict, path: Path) -> None:
    import pymupdf

    pdf = pymupdf.open()
    page = pdf.new_page(width=595, height=842)  # A4, points
    y = 72.0
    page.insert_textbox(pymupdf.Rect(72, y, 523, y + 40), doc["title"], fontsize=16,
                        fontname="helv")
    y += 48
    for paragraph in doc["paragraphs"]:
        rect = pymupdf.Rect(72, y, 523, y + 60)
        left = page.insert_textbox(rect, paragraph, fontsize=11, fontname="helv")
        y += 60 - max(0.0, left) + 12  # insert_textbox returns the unused height
    pdf.set_metadata({"title": doc["title"]})
    path.parent.mkdir(parents=True, exist_ok=True)
    pdf.save(str(path))
    pdf.close()


def write_set(json_path: Path, out_dir: Path) -> list[Path]:
    data = json.loads(json_path.read_text())
    paths = []
    for doc in data["documents"]:
        path = out_dir / f"{doc['name']}.pdf"
        write_article(doc, path)
        paths.append(path)
    return paths


if __name__ == "__main__":
    out = Path(sys.argv[1])
    sets = [Path(p) for p in sys.argv[2:]] or sorted(KG_FIXTURES.glob("company_news*.json"))
    for s in sets:
        print(len(write_set(s, out)), "PDFs from", s.name)
