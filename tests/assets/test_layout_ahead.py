"""The layout model's boxes read ahead by a background process (assets/_layout_ahead.py): the
layout stage takes them and stores the layout it would have found itself."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pymupdf
import pytest
from dagster import DagsterInstance, materialize

import h3.assets._layout_ahead as ahead_module
from h3.assets._layout_ahead import LayoutAhead, Reading, layout_ahead, read_boxes
from h3.assets._page_boxes import detected_pages
from h3.assets.documents import documents
from h3.assets.layout import layout
from h3.pipelines.definitions import RESOURCES
from h3.pipelines.registry import register
from h3.resources.models.layout import Detection, LayoutModelResource
from h3.resources.store import open_store


def _wait(ahead: LayoutAhead, doc_id: str) -> None:
    for future in ahead._pending[doc_id][1]:
        future.result(timeout=120)


def _layout_of(doc_id: str) -> dict:
    instance = DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("documents", [doc_id])
    result = materialize([documents, layout], partition_key=doc_id, instance=instance,
                         resources=RESOURCES)
    assert result.success
    payload = dict(result.output_for_node("layout")[doc_id])
    payload.pop("stage_seconds")
    return payload


@pytest.mark.slow
def test_the_stage_takes_the_boxes_read_ahead_and_stores_the_same_layout(
        h3_home, sample_corpus, monkeypatch):
    pdf = sample_corpus / "annual_report.pdf"
    doc_id = register(open_store(), pdf).doc_id
    own = _layout_of(doc_id)

    taken = []
    real_take = LayoutAhead.take

    def spy(self, *args):
        got = real_take(self, *args)
        taken.append(got)
        return got

    monkeypatch.setattr(LayoutAhead, "take", spy)
    monkeypatch.setenv("H3_CPU_THREADS", "2")
    with layout_ahead() as ahead:
        assert ahead is not None
        ahead.submit({doc_id: str(pdf)}, RESOURCES["layout_model"])
        _wait(ahead, doc_id)  # read before the stage asks
        read_ahead = _layout_of(doc_id)
    assert len(taken) == 1 and taken[0] is not None
    boxes, cpu = taken[0]
    assert any(boxes.values()) and cpu > 0
    assert read_ahead.pop("stage_cpu_seconds") >= cpu  # the reader's CPU counts in the stage
    own.pop("stage_cpu_seconds")
    assert read_ahead == own
    assert any(page["model"] for page in own["layout"])


def test_a_changed_file_other_settings_or_an_unread_document_get_nothing(tmp_path,
                                                                         sample_corpus):
    pdf = tmp_path / "report.pdf"
    shutil.copy(sample_corpus / "annual_report.pdf", pdf)
    model = LayoutModelResource()
    ahead = LayoutAhead()
    try:
        ahead.submit({"a": str(pdf), "b": str(pdf), "c": str(pdf)}, model)
        for doc in "abc":
            _wait(ahead, doc)
        assert ahead.take("a", str(pdf), LayoutModelResource(dpi=96)) is None
        assert ahead.take("never-given", str(pdf), model) is None
        assert ahead.take("b", str(pdf), model) is not None
        assert ahead.take("b", str(pdf), model) is None  # taken once
        os.utime(pdf, ns=(1, 1))  # new bytes (or a touch): read again by the stage
        assert ahead.take("c", str(pdf), model) is None
    finally:
        ahead.close()


def test_a_file_the_reader_cannot_read_is_left_to_the_stage(tmp_path):
    bad = tmp_path / "broken.pdf"
    bad.write_bytes(b"%PDF-1.7\nnot a pdf at all")
    ahead = LayoutAhead()
    try:
        model = LayoutModelResource()
        ahead.submit({"bad": str(bad)}, model)
        assert "bad" not in ahead._pending  # PyMuPDF cannot open it: nothing to read ahead
        assert ahead.take("bad", str(bad), model) is None
    finally:
        ahead.close()


def test_no_reader_on_one_core_or_without_the_model(monkeypatch, tmp_path):
    monkeypatch.setenv("H3_CPU_THREADS", "1")
    with layout_ahead() as ahead:
        assert ahead is None
        assert ahead_module.boxes_found_ahead("d", Path(tmp_path / "x.pdf"),
                                              LayoutModelResource()) is None
    monkeypatch.setenv("H3_CPU_THREADS", "2")
    with layout_ahead() as ahead:
        ahead.submit({"d": str(tmp_path / "x.pdf")}, LayoutModelResource(enabled=False))
        assert ahead._pending == {} and ahead._pool is None


def test_pages_read_ahead_and_pages_read_by_the_stage_join_up(sample_corpus):
    """Some pages read ahead (the tasks that ran), the rest by the stage: the same boxes as
    the stage reading all of them."""
    pdf_path = str(sample_corpus / "annual_report.pdf")
    model = LayoutModelResource()
    detector = model.get_detector()
    with pymupdf.open(pdf_path) as pdf:
        own = [(p.number, boxes) for p, boxes in detected_pages(pdf, detector, model.wants,
                                                                model.dpi, 2)]
        assert pdf.page_count >= 3 and any(boxes for _, boxes in own)
        ahead, cpu = read_boxes(Reading.of(pdf_path, model), 1, 2)  # page 2 only
        assert set(ahead) == {1} and cpu > 0
        joined = [(p.number, boxes) for p, boxes in detected_pages(
            pdf, detector, model.wants, model.dpi, 2, known=ahead)]
        given = [Detection("table", 0.9, (1.0, 2.0, 3.0, 4.0))]  # taken as they are
        marked = [(p.number, boxes) for p, boxes in detected_pages(
            pdf, detector, model.wants, model.dpi, 2, known={1: given})]
    assert joined == own
    assert marked[1] == (1, given) and marked[:1] + marked[2:] == own[:1] + own[2:]
