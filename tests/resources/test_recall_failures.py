"""No silent failure in recall and the stages it reads (issue 37): a renamed intent module is an
ImportError, not an intent quietly gone; a detector or a part of the store that fails is said in
the result's notes ("relation lookup failed: ..."); the second PDF reader and the structures'
page text say why they read nothing; a bug while re-profiling is not mistaken for an
unreadable file."""

from __future__ import annotations

import pymupdf
import pytest

from h3.ontology.document import Hit
from h3.resources.recall import recall, register_intent
from h3.resources.recall.router import _load_intents
from tests.doubles import MemoryStore, scripted_intents


def test_an_intent_module_that_cannot_be_imported_is_an_error(monkeypatch):
    from h3.resources.recall import router

    monkeypatch.setattr(router, "INTENT_MODULES",
                        (*router.INTENT_MODULES, "h3.resources.recall.renamed_away"))
    with pytest.raises(ImportError, match=r"h3\.resources\.recall\.renamed_away"):
        _load_intents()
    with pytest.raises(ImportError, match="renamed_away"):
        recall(MemoryStore(), ["q"])


@pytest.fixture
def ctx():
    """The real relation detector, scripted handlers, the in-memory store."""
    from h3.resources.recall.relation import detect_relation

    text = [Hit("d", "d.pdf", 1, (0.0, 0.0, 10.0, 10.0), "text", "revenue", 0.9, "text")]

    def register() -> None:
        register_intent("text", lambda ctx, q, k: text, always_in_auto=True)
        register_intent("relation", lambda ctx, q, k: [], detect=detect_relation)

    with scripted_intents(register, pages=3) as context:
        yield context


def test_a_failing_detector_is_said_in_the_result(ctx, monkeypatch, caplog):
    import h3.resources.store as store_pkg
    from h3.pipelines.cli.recall import _human

    def unreachable():
        raise OSError("store unreachable")

    monkeypatch.setattr(store_pkg, "open_store", unreachable)
    first, second = recall(ctx.store, ["Acme revenue", "other"], k=3, ctx=ctx)
    note = "relation lookup failed: OSError: store unreachable"
    assert first["notes"] == [note] and first["intent"] == ["text"]
    assert len(first["hits"]) == 1  # the other intents still answer
    assert second["notes"] == [note]  # each query that could not be looked up says so
    assert note in caplog.text
    assert f"  note: {note}" in _human([{**first, "latency_ms": 1.0}]).splitlines()


def test_an_unreadable_document_index_is_said_in_every_result(ctx, monkeypatch):
    import h3.resources.semantic.artifacts as artifacts
    from h3.resources.recall.documents import query_summary

    def torn():
        raise ValueError("torn file")

    monkeypatch.setattr(artifacts, "pca_path", torn)
    assert query_summary(ctx, "q") is None  # the compressed layer is left out, not fatal
    [result] = recall(ctx.store, ["revenue"], k=3, ctx=ctx)
    [note] = result["notes"]
    assert note.startswith("document index lookup failed:") and "ValueError: torn file" in note


def test_reprofiling_falls_back_on_an_unreadable_file_but_not_on_a_bug(tmp_path, monkeypatch):
    import h3.resources.recall.documents as documents

    source = tmp_path / "old.pdf"
    source.write_bytes(b"%PDF-1.4")
    stored = {"issuer": "Acme Corp", "version": 0}

    def damaged(path):
        raise pymupdf.FileDataError("cannot open broken document")

    monkeypatch.setattr(documents, "profile_pdf", damaged)
    assert documents.current_profile(stored, str(source)).issuer == "Acme Corp"

    def bug(path):
        raise TypeError("profile_document() got an unexpected keyword")

    monkeypatch.setattr(documents, "profile_pdf", bug)
    with pytest.raises(TypeError):
        documents.current_profile(stored, str(source))


def test_the_second_reader_says_why_it_read_nothing(h3_home, tmp_path):
    from h3.assets._batch import DocumentError
    from h3.assets._second_reader import read_pages
    from h3.assets.documents import inspect_pdf

    failures: list[str] = []
    assert read_pages(b"garbage", failures) is None
    assert [f.split(":")[0] for f in failures] == ["pypdfium2", "pdfminer"]
    assert "PdfiumError" in failures[0] and "PDFSyntaxError" in failures[1]
    path = tmp_path / "hollow.pdf"
    path.write_bytes(b"%PDF-1.7\n1 0 obj\n<< /Type /Catalog /Pages 9 0 R >>\nendobj\n"
                     b"trailer\n<< /Root 1 0 R >>\n%%EOF\n")
    with pytest.raises(DocumentError, match=r"no pages \(MuPDF reads none; pypdfium2: Pdfium"):
        inspect_pdf(path)


def test_structures_say_when_the_page_text_could_not_be_read(tmp_path):
    from h3.assets.structures import page_text

    failures: list[str] = []
    assert page_text(str(tmp_path / "gone.pdf"), {1}, failures) == ({}, {}, {})
    [reason] = failures
    assert str(tmp_path / "gone.pdf") in reason and "the regions' own text is used" in reason
