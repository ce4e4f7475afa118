"""Per-document work on worker processes (resources/document_workers.py): the results one
process gives, failures per document, workers started only for enough work."""

from __future__ import annotations

import os
import time

import pytest

from h3.resources import document_workers
from h3.resources.nlp.extract import extract
from h3.resources.nlp.types import TextUnit

TEXTS = [
    "Jane Doe was appointed Chief Financial Officer of Acme Holdings Inc. in March 2021.",
    "Acme Holdings acquired Widget Corp for $1.2 billion; the deal closed in Ohio.",
    "The company's headquarters are in Denver, Colorado. John Smith chairs its board.",
    "Revenue grew 12% to $4.5 billion, driven by the Industrial segment in Europe.",
]


def _units(doc: str, n: int) -> list[TextUnit]:
    return [TextUnit(doc, page, (0.0, 0.0, 100.0, 20.0), TEXTS[page % len(TEXTS)])
            for page in range(1, n + 1)]


def _fail_on_bad(doc: str) -> str:
    if doc == "bad":
        raise ValueError("unreadable region")
    return f"done {doc}"


def _results(pending: dict) -> dict:
    return {d: p.result() for d, p in pending.items()}


@pytest.fixture
def two_workers(monkeypatch):
    monkeypatch.setattr(document_workers, "cpu_threads", lambda: 2)
    yield
    document_workers.shutdown()


@pytest.mark.slow
def test_workers_extract_what_one_process_does(two_workers):
    docs = {"a": _units("a", 7), "b": _units("b", 3), "c": _units("c", 5)}
    pending = document_workers.map_documents(extract, {d: (u,) for d, u in docs.items()},
                                             {d: 10.0 for d in docs})  # enough to start them
    got = {d: p.result() for d, p in pending.items()}
    assert document_workers._POOL is not None, "the workers were not used: nothing compared"
    assert list(got) == list(docs)
    for doc_id, units in docs.items():
        expected = extract(units)
        assert got[doc_id].error is None
        assert got[doc_id].value.mentions == expected.mentions
        assert got[doc_id].value.edges == expected.edges
        assert expected.mentions, "no entity found: the comparison says nothing"
        assert got[doc_id].cpu_seconds > 0


def test_one_failing_document_fails_alone_on_workers(two_workers):
    got = _results(document_workers.map_documents(
        _fail_on_bad, {"ok": ("ok",), "bad": ("bad",)}, {"ok": 5.0, "bad": 5.0}))
    assert document_workers._POOL is not None
    assert got["ok"].value == "done ok" and got["ok"].error is None
    assert isinstance(got["bad"].error, ValueError) and "unreadable" in str(got["bad"].error)


def test_little_work_or_one_core_stays_in_this_process(two_workers, monkeypatch):
    got = _results(document_workers.map_documents(_fail_on_bad, {"a": ("a",), "b": ("b",)},
                                                  {"a": 0.5, "b": 0.5}))
    assert document_workers._POOL is None
    assert [o.value for o in got.values()] == ["done a", "done b"]
    monkeypatch.setattr(document_workers, "cpu_threads", lambda: 1)
    got = _results(document_workers.map_documents(
        _fail_on_bad, {"a": ("a",), "bad": ("bad",)}, {"a": 50.0, "bad": 50.0}))
    assert document_workers._POOL is None
    assert got["a"].value == "done a" and isinstance(got["bad"].error, ValueError)


def _where(parent_pid: int) -> str:
    if os.getpid() == parent_pid:
        return "here"
    time.sleep(30)  # long enough for the test to kill this worker
    return "worker"


def test_documents_of_killed_workers_are_computed_here(two_workers):
    pending = document_workers.map_documents(
        _where, {"a": (os.getpid(),), "b": (os.getpid(),)}, {"a": 5.0, "b": 5.0})
    deadline = time.time() + 30
    while not document_workers._POOL._processes and time.time() < deadline:
        time.sleep(0.1)
    time.sleep(2)  # the tasks reach the workers
    for proc in list(document_workers._POOL._processes.values()):
        proc.kill()
    assert [p.result().value for p in pending.values()] == ["here", "here"]
    assert document_workers._POOL is None  # gone; the next call that pays starts new ones
