"""Ingestion stages materialised with `materialize(...)` on the small real PDFs of the corpus."""

from __future__ import annotations

from pathlib import Path

import pytest
from dagster import DagsterInstance, materialize

from h3.assets.chunks import chunks
from h3.assets.documents import documents
from h3.assets.figures import figures
from h3.assets.layout import layout
from h3.assets.ocr import ocr
from h3.assets.tables import tables
from h3.pipelines.definitions import RESOURCES
from h3.pipelines.registry import register
from h3.resources.models.ocr import OcrResource
from h3.resources.store import open_store


def _materialize(pdf: Path, assets: list, resources: dict | None = None):
    store = open_store()
    doc_id = register(store, pdf).doc_id
    instance = DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("documents", [doc_id])
    result = materialize(assets, partition_key=doc_id, instance=instance,
                         resources={**RESOURCES, **(resources or {})})
    assert result.success
    return doc_id, result


@pytest.mark.slow
def test_text_table_figure_stages(h3_home, sample_corpus):
    doc_id, result = _materialize(sample_corpus / "annual_report.pdf",
                                  [documents, layout, tables, figures, ocr, chunks])
    doc = result.output_for_node("documents")[doc_id]
    assert (doc["pages"], doc["text_pages"]) == (3, [True, True, True])
    assert doc["title"] == "Northwind Robotics Annual Report 2023"

    page2 = result.output_for_node("layout")[doc_id]["layout"][1]["blocks"]["blocks"]
    assert any(b["type"] == "title" and b["text"] == "Quarterly results" for b in page2)

    found = result.output_for_node("tables")[doc_id]["tables"]
    table = next(t for t in found if t["origin"] == "find_tables")
    assert table["page"] == 2 and table["rows"][0] == ["Quarter", "Revenue", "New orders"]
    assert ["Q4 2023", "14.2", "16.8"] in table["rows"]  # decimals intact (MODELS.md caveat)

    figs = result.output_for_node("figures")[doc_id]["figures"]
    fig = next(f for f in figs if f["page"] == 2)
    assert fig["caption"].startswith("Figure 1: Revenue by quarter")
    assert Path(fig["image_path"]).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert h3_home in Path(fig["image_path"]).parents

    out = result.output_for_node("chunks")[doc_id]
    by_text = {c["text"]: c for c in out["chunks"]}
    first = next(c for t, c in by_text.items() if "48.7 million euros" in t)
    assert first["page"] == 1 and first["section"] == "Letter to shareholders"
    x0, y0, x1, y1 = first["bbox"]
    assert 0 <= x0 < x1 <= 595.3 and 0 <= y0 < y1 <= 842
    assert any(c["kind"] == "table" and c["page"] == 2 and "14.2" in c["text"]
               for c in out["chunks"])
    assert all(c["token_count"] <= 300 for c in out["chunks"])


@pytest.mark.slow
def test_ocr_reads_the_scanned_page_and_can_be_switched_off(h3_home, sample_corpus):
    pdf = sample_corpus / "field_notes_scan.pdf"
    doc_id, result = _materialize(pdf, [documents, ocr])
    pages = result.output_for_node("ocr")[doc_id]["ocr_pages"]
    assert [p["page"] for p in pages] == [2]
    text = " ".join(q["text"] for q in pages[0]["paragraphs"]).lower()
    assert "corrosion" in text and "pier" in text
    assert all(0 <= q["bbox"][0] < q["bbox"][2] <= 596 for q in pages[0]["paragraphs"])

    doc_id, off = _materialize(pdf, [documents, ocr], {"ocr_engine": OcrResource(enabled=False)})
    timings = {"stage_seconds": 0, "stage_cpu_seconds": 0}
    assert off.output_for_node("ocr")[doc_id] | timings == {
        "source": str(pdf.resolve()), "ocr_pages": [], "skipped_pages": [2], "status": "ok",
        **timings}


def _without_timings(payloads: dict) -> dict:
    return {d: {k: v for k, v in p.items() if k not in ("stage_seconds", "stage_cpu_seconds")}
            for d, p in payloads.items()}


@pytest.mark.slow
def test_tables_and_figures_on_document_workers_equal_one_process(h3_home, sample_corpus,
                                                                  monkeypatch, tmp_path):
    """The stages' per-document work on worker processes (resources/document_workers.py) gives
    what one process does, and crops land under this H3_HOME even when the workers were
    started under another one (a worker keeps the environment it was spawned with)."""
    from h3.resources import document_workers

    pdf = sample_corpus / "annual_report.pdf"
    stages = [documents, layout, tables, figures]
    doc_id, alone = _materialize(pdf, stages)
    monkeypatch.setattr(document_workers, "cpu_threads", lambda: 2)
    monkeypatch.setattr(document_workers, "START_S", 0.0)
    try:
        with monkeypatch.context() as elsewhere:  # workers spawned under another H3_HOME
            elsewhere.setenv("H3_HOME", str(tmp_path / "other-home"))
            document_workers.map_documents(str, {"a": (1,), "b": (2,)}, {"a": 1.0, "b": 1.0})
        assert document_workers._POOL is not None
        _, spread = _materialize(pdf, stages)
    finally:
        document_workers.shutdown()
    for stage in ("tables", "figures"):
        assert _without_timings(spread.output_for_node(stage)) == _without_timings(
            alone.output_for_node(stage))
    figs = spread.output_for_node("figures")[doc_id]["figures"]
    assert figs and all(h3_home in Path(f["image_path"]).parents for f in figs)
    assert not (tmp_path / "other-home").exists()
