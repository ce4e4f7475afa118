"""Typed stage records (ontology/records.py) read and write the staged JSON unchanged."""

import json
from pathlib import Path

import pytest
from dagster import DagsterInstance, materialize

from h3.ontology.records import (
    ChunkRecord,
    ChunksRecord,
    DocumentRecord,
    EmbeddingsRecord,
    FiguresRecord,
    LayoutRecord,
    OcrRecord,
    RegionRecord,
    StageFailure,
    StoredRecord,
    TablesRecord,
    read_payload,
)

TIMES = {"stage_seconds": 0.0123, "stage_cpu_seconds": 0.0119}

# Payloads as the stages stage them (shapes copied from the sample corpus' staged files, plus
# the keys a layout model run and a failed OCR page add).
DOCUMENT = {
    "status": "ok", "reason": None, "source": "/corpus/report.pdf", "pages": 2,
    "title": "Annual report", "metadata": {"format": "PDF 1.7", "title": "Annual report"},
    "content_hash": "ab" * 20, "bytes": 16481, "text_pages": [True, False],
    "page_sizes": [[595.0, 842.0], [842.0, 595.0]], "repaired": False, "garbled_pages": [2],
    "warnings": ["/corpus/report.pdf: unreadable text layer on pages 2"],
    "profile": {"issuer": "", "aliases": [], "fiscal_year": 2023, "notes": ["x"], "version": 2},
    **TIMES,
}
BLOCK = {"x_1": 56.0, "y_1": 56.0, "x_2": 401.04, "y_2": 80.79, "block_type": "rectangle",
         "text": "Quarterly results", "id": 0, "type": "title"}
LAYOUT = {
    "source": "/corpus/report.pdf", "pages": 2,
    "layout": [
        {"page": 1, "width": 595.0, "height": 842.0, "rotation": 0,
         "blocks": {"page_data": {}, "blocks": [BLOCK, {**BLOCK, "id": 1, "type": "text",
                                                        "score": 0.912}]},
         "detections": {"page_data": {}, "blocks": [
             {"x_1": 50.0, "y_1": 300.0, "x_2": 540.0, "y_2": 500.0, "block_type": "rectangle",
              "id": 0, "type": "table", "score": 0.87}]},
         "images": [[60.0, 520.0, 300.0, 700.0]], "model": True},
        {"page": 2, "width": 842.0, "height": 595.0, "rotation": 90,
         "blocks": {"page_data": {}, "blocks": []}, "detections": {"page_data": {}, "blocks": []},
         "images": [], "model": False},
    ],
    "status": "ok", **TIMES,
}
TABLES = {"source": "/corpus/report.pdf", "tables": [
    {"page": 1, "bbox": [56.0, 300.0, 540.0, 480.5], "rows": [["Quarter", "Revenue"],
                                                              ["Q4 2023", "14.2"]],
     "markdown": "| Quarter | Revenue |\n|---|---|\n| Q4 2023 | 14.2 |", "origin": "find_tables"},
], "status": "ok", **TIMES}
FIGURES = {"source": "/corpus/report.pdf", "figures": [
    {"page": 1, "bbox": [60.0, 520.0, 300.0, 700.0], "image_path": "/h3/figures/d/p1-f0.png",
     "caption": "Figure 1: Revenue by quarter", "origin": "layout-model", "text": "Q1 Q2"},
], "status": "ok", **TIMES}
OCR = {"source": "/corpus/report.pdf", "ocr_pages": [
    {"page": 2, "paragraphs": [{"bbox": [56.88, 60.1, 300.0, 80.0], "text": "Inspection summary",
                                "score": 95.8}], "languages": "eng"},
], "skipped_pages": [], "errors": ["page 3 of /corpus/report.pdf: OCR failed: x"],
    "status": "ok", **TIMES}
OCR_OFF = {"source": "/corpus/report.pdf", "ocr_pages": [], "skipped_pages": [2],
           "status": "ok", **TIMES}  # OCR did not run: no "errors" key
REGION = {"doc_id": "d", "region_id": "d:p1:r0", "page": 1, "kind": "table",
          "bbox": [56.0, 300.0, 540.0, 480.5], "text": "| Quarter | Revenue |", "order": 0,
          "origin": "find_tables", "image_path": None,
          "extra_json": json.dumps({"rows": [["Quarter", "Revenue"]]})}
CHUNK = {"doc_id": "d", "chunk_id": "d:c0", "page": 1, "bbox": [56.0, 56.0, 540.0, 480.5],
         "text": "Quarterly results\n| Quarter | Revenue |", "section": "Quarterly results",
         "kind": "table", "token_count": 12, "region_ids": ["d:p1:r0"]}
CHUNKS = {"source": "/corpus/report.pdf", "regions": [REGION], "chunks": [CHUNK],
          "warnings": [], "status": "ok", **TIMES}
EMBEDDINGS = {"status": "ok", "source": "/corpus/report.pdf",
              "vectors": [[0.1, -0.25, 0.0], [0.5, 0.5, 0.707107]],
              "vectors_ml": {"1": [0.3, 0.3, 0.9]}, **TIMES}  # JSON keys: strings
EMBEDDINGS_EN = {"status": "ok", "source": "/corpus/report.pdf", "vectors": [], **TIMES}
STORED = {"status": "ok", "source": "/corpus/report.pdf", "pages": 2, "regions": 7,
          "chunks": 3, "replaced": ["0123456789abcdef"], **TIMES}
STORED_ML = {"status": "ok", "source": "/corpus/report.pdf", "pages": 2, "regions": 7,
             "chunks": 3, "chunks_ml": 1, "replaced": [], **TIMES}
FAILED = {"status": "failed", "reason": "report.pdf: truncated PDF", "source": "report.pdf",
          **TIMES}


@pytest.mark.parametrize(("record", "payload"), [
    (DocumentRecord, DOCUMENT), (LayoutRecord, LAYOUT), (TablesRecord, TABLES),
    (FiguresRecord, FIGURES), (OcrRecord, OCR), (OcrRecord, OCR_OFF), (RegionRecord, REGION),
    (ChunkRecord, CHUNK), (ChunksRecord, CHUNKS), (EmbeddingsRecord, EMBEDDINGS),
    (EmbeddingsRecord, EMBEDDINGS_EN), (StoredRecord, STORED), (StoredRecord, STORED_ML),
    (StageFailure, FAILED),
])
def test_each_record_round_trips_its_payload(record, payload):
    read = record.from_json(json.loads(json.dumps(payload)))
    assert read.to_json() == payload
    assert list(read.to_json()) == list(payload)  # the keys in the staged order, too
    assert json.dumps(read.to_json()) == json.dumps(payload)  # ints stay ints, tuples lists


def test_records_are_typed_views_of_the_payload():
    layout = LayoutRecord.from_json(LAYOUT)
    page = layout.layout[0]
    assert page.blocks[0].bbox == (56.0, 56.0, 401.04, 80.79) and page.model
    assert page.boxes_of("table") == [[50.0, 300.0, 540.0, 500.0]]
    assert DocumentRecord.from_json(DOCUMENT).garbled_pages == (2,)
    assert OcrRecord.from_json(OCR_OFF).errors is None
    chunks = ChunksRecord.from_json(CHUNKS)
    assert chunks.chunks[0].region_ids == (chunks.regions[0].region_id,)
    assert EmbeddingsRecord.from_json(EMBEDDINGS).vectors[1] == (0.5, 0.5, 0.707107)
    assert StoredRecord.from_json(STORED_ML).counts() == {"regions": 7, "chunks": 3,
                                                          "chunks_ml": 1}


def test_without_timings_and_with_unknown_keys():
    """What a stage returns before the runner adds timings, and a file of another version."""
    untimed = {k: v for k, v in TABLES.items() if k not in TIMES}
    assert TablesRecord.from_json(untimed).to_json() == untimed
    newer = {**CHUNKS, "language": "en"}
    assert ChunksRecord.from_json(newer).to_json() == newer


def test_read_payload_tells_ok_from_failed():
    assert isinstance(read_payload(TABLES, TablesRecord), TablesRecord)
    failed = read_payload({"status": "failed", "reason": "missing upstream", "source": None},
                          TablesRecord)
    assert isinstance(failed, StageFailure) and failed.reason == "missing upstream"


STAGED = {"documents": DocumentRecord, "layout": LayoutRecord, "tables": TablesRecord,
          "figures": FiguresRecord, "ocr": OcrRecord, "chunks": ChunksRecord,
          "embeddings": EmbeddingsRecord, "cold_store": StoredRecord}


@pytest.mark.slow
def test_files_the_stages_stage_read_back_as_records(h3_home, sample_corpus):
    """The eight ingestion stages run on a sample PDF: each staged file reads as its record, and
    the record writes the file's JSON back unchanged."""
    from h3.assets.chunks import chunks
    from h3.assets.documents import documents
    from h3.assets.embeddings import embeddings
    from h3.assets.figures import figures
    from h3.assets.layout import layout
    from h3.assets.ocr import ocr
    from h3.assets.store import cold_store
    from h3.assets.tables import tables
    from h3.pipelines.definitions import RESOURCES
    from h3.pipelines.registry import register
    from h3.resources.store import open_store

    doc_id = register(open_store(), sample_corpus / "annual_report.pdf").doc_id
    instance = DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("documents", [doc_id])
    result = materialize([documents, layout, tables, figures, ocr, chunks, embeddings, cold_store],
                         partition_key=doc_id,
                         instance=instance, resources=RESOURCES)
    assert result.success
    read = {}
    for stage, record in STAGED.items():
        staged = json.loads((Path(h3_home) / "staging" / stage / f"{doc_id}.json").read_text())
        read[stage] = read_payload(staged, record)
        assert isinstance(read[stage], record), (stage, staged.get("reason"))
        assert read[stage].to_json() == staged
    assert read["documents"].pages == 3
    assert any(t.origin == "find_tables" for t in read["tables"].tables)
    assert read["figures"].figures[0].caption.startswith("Figure 1")
    assert {c.kind for c in read["chunks"].chunks} >= {"text", "table"}
    assert len(read["embeddings"].vectors) == len(read["chunks"].chunks)
    assert len(read["embeddings"].vectors[0]) == 384
    stored = read["cold_store"]
    assert stored.chunks == len(read["chunks"].chunks) == len(open_store().rows(
        "chunks", f"doc_id = '{doc_id}'", ["chunk_id"]))
