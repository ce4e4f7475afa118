"""The CLI surfaces of issue 10: `h3 list`, `h3 delete`, `--queries-file` errors, index-build's
warnings, precheck and progress, and the text output's notes / weak-match / evidence pages."""

from __future__ import annotations

import json
import time

import pytest

from h3.pipelines.cli.main import main
from h3.pipelines.cli.output import CliError, Progress


def _row(doc_id: str, source: str, status: str, reason: str | None = None, chunks: int = 0):
    return {"doc_id": doc_id, "source": source, "content_hash": doc_id, "status": status,
            "reason": reason, "pages": 2 if status == "ok" else None, "title": None,
            "metadata_json": json.dumps({"counts": {"chunks": chunks}}), "bytes": 10,
            "updated_at": time.time()}


def test_list_shows_ids_files_status_reason_and_counts(h3_home, capsys):
    from h3.resources.store import open_store

    store = open_store()
    store.upsert_document(_row("a" * 16, "/in/report.pdf", "ok", chunks=7))
    store.upsert_document(_row("b" * 16, "/in/notes.pdf", "failed", "/in/notes.pdf: not a PDF"))
    assert main(["list", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert listed == [
        {"doc_id": "b" * 16, "source": "/in/notes.pdf", "status": "failed",
         "reason": "/in/notes.pdf: not a PDF", "pages": None, "chunks": 0,
         "partition_key": None},  # no Dagster partition (tests/pipelines/test_partition_keys)
        {"doc_id": "a" * 16, "source": "/in/report.pdf", "status": "ok", "reason": None,
         "pages": 2, "chunks": 7, "partition_key": None}]
    assert main(["list", "--status", "failed"]) == 0
    text = capsys.readouterr().out
    assert "notes.pdf" in text and "not a PDF" in text and "report.pdf" not in text


def test_delete_resolves_ids_paths_and_folders_and_refuses_unknown(h3_home, tmp_path, capsys):
    from h3.pipelines.cli.delete import resolve_targets

    rows = [{"doc_id": "a" * 16, "source": str(tmp_path / "in" / "x.pdf")},
            {"doc_id": "b" * 16, "source": str(tmp_path / "in" / "sub" / "y.pdf")},
            {"doc_id": "c" * 16, "source": str(tmp_path / "other.pdf")}]
    assert resolve_targets(rows, ["a" * 16]) == (["a" * 16], [])
    assert resolve_targets(rows, [str(tmp_path / "in")]) == (["a" * 16, "b" * 16], [])
    assert resolve_targets(rows, [str(tmp_path / "in" / "sub" / "y.pdf"), "nope.pdf"]) == (
        ["b" * 16], ["nope.pdf"])
    # a bare file name, as `h3 ask --doc` takes it: only where one stored file has it
    assert resolve_targets(rows, ["y.pdf"]) == (["b" * 16], [])
    twice = rows + [{"doc_id": "d" * 16, "source": str(tmp_path / "in" / "sub" / "x.pdf")}]
    assert resolve_targets(twice, ["x.pdf"]) == (
        [], ["x.pdf (the name of 2 stored files: give the path or the doc id)"])
    assert main(["delete", "f" * 16]) == 2  # nothing registered: a one-line error, exit 2
    assert "no document with this id or path" in capsys.readouterr().err


@pytest.mark.parametrize("content, message", [
    (b'{"query": "a"}\n{bad json\n', "line 2: not valid JSON"),
    (b'{"query": "a"}\n\n{"q": "b"}\n', 'line 3: no "query" field'),
    (b'{"query": 3}\n', '"query" must be a string'),
    (b"\x7fELF\x02\x01\x01\x00\x00", "line 1: a binary file"),
    (b"caf\xe9\n", "line 1: not UTF-8 text"),
    (b'["a", {"x": 1}]', 'item 2: no "query" field'),
    (b'[1, 2', "not a valid JSON array"),
])
def test_bad_queries_file_is_one_line_naming_file_and_line(tmp_path, content, message):
    from h3.pipelines.cli.queries_file import read_queries

    path = tmp_path / "q.jsonl"
    path.write_bytes(content)
    with pytest.raises(CliError) as err:
        read_queries(str(path))
    assert str(path) in str(err.value) and message in str(err.value)
    assert "\n" not in str(err.value)


def test_queries_file_reads_lines_jsonl_and_json_arrays(tmp_path):
    from h3.pipelines.cli.queries_file import read_queries

    mixed = tmp_path / "q.txt"
    mixed.write_text('plain question\n\n{"query": "from json", "k": 3}\n')
    assert read_queries(str(mixed)) == ["plain question", "from json"]
    array = tmp_path / "q.json"
    array.write_text('["one", {"query": "two"}]')
    assert read_queries(str(array)) == ["one", "two"]


def test_index_build_warns_and_exits_2_without_pdf(h3_home, tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    assert main(["index-build", "--path", str(tmp_path / "empty")]) == 2
    assert "no PDF under" in capsys.readouterr().err


def test_no_dagster_run_when_every_file_fails_the_first_check(h3_home, tmp_path, capsys):
    from h3.pipelines.instance import get_instance

    folder = tmp_path / "bad"
    folder.mkdir()
    (folder / "empty.pdf").write_bytes(b"")
    (folder / "text.pdf").write_text("just some notes\n")
    (folder / "cut.pdf").write_bytes(b"%PDF-1.7\n1 0 obj\n<< /Type /Catalog >>\nendobj\n")
    assert main(["index-build", "--path", str(folder), "--json"]) == 1
    captured = capsys.readouterr()
    report = json.loads(captured.out)
    assert (report["ok"], report["failed"], report["run_ids"]) == (0, 3, [])
    reasons = {d["source"].rsplit("/", 1)[-1]: d["reason"] for d in report["documents"]}
    assert "empty file" in reasons["empty.pdf"] and "not a PDF" in reasons["text.pdf"]
    assert "truncated" in reasons["cut.pdf"]
    assert report["compress"]["status"] == "skipped"
    assert get_instance().get_runs() == []
    for reason in reasons.values():  # each reason once on stderr (stdout is the JSON)
        assert captured.err.count(reason) == 1
    assert main(["list", "--status", "failed", "--json"]) == 0
    assert len(json.loads(capsys.readouterr().out)) == 3


def test_progress_lines_on_a_pipe_and_nothing_when_disabled(capsys):
    bar = Progress(4, "index-build", enabled=True)
    bar.advance(2, pages=30)
    bar.close()
    err = capsys.readouterr().err.splitlines()
    assert err[0] == "index-build: 4 files to ingest"
    assert err[1].startswith("index-build: 2/4 files, 30 pages, ") and "pages/s, ETA" in err[1]
    assert bar.line(10.0) == "index-build: 2/4 files, 30 pages, 3.0 pages/s, ETA 10s"
    quiet = Progress(4, "index-build", enabled=False)
    quiet.advance(4, pages=10)
    quiet.close()
    assert capsys.readouterr().err == ""


def test_text_output_shows_notes_weak_matches_and_evidence_pages():
    from h3.pipelines.cli.annotate import WEAK_SCORE
    from h3.pipelines.cli.ask import evidence_pages
    from h3.pipelines.cli.recall import _human

    hit = {"source": "/in/report.pdf", "page": 3, "bbox": [0, 0, 1, 1], "kind": "text",
           "text": "revenue", "score": WEAK_SCORE - 0.05}
    text = _human([{"query": "  ", "intent": [], "latency_ms": 0.0, "hits": [],
                    "note": "empty query"},
                   {"query": "q", "intent": ["text"], "latency_ms": 1.0, "hits": [hit]},
                   {"query": "r", "intent": ["text"], "latency_ms": 1.0,
                    "hits": [{**hit, "score": WEAK_SCORE + 0.1}]}])
    blocks = text.split("> ")[1:]
    assert "note: empty query" in blocks[0]
    assert "weak match" in blocks[1] and "weak match" not in blocks[2]
    assert evidence_pages([hit, {**hit, "page": 1}, {**hit, "source": "/in/b.pdf"}]) == (
        "evidence: report.pdf p.1, 3; b.pdf p.3")


def test_a_snippet_shows_the_sentence_that_matched_not_the_chunks_opening():
    from h3.pipelines.cli.annotate import SNIPPET_WIDTH, snippet

    text = ("Item 7. Management's Discussion and Analysis of Financial Condition and Results of "
            "Operations. The following table shows our segments. Warehouse rents rose slightly. "
            "Capital expenditures were $1,577 million in 2018, mostly for new plants and "
            "equipment. Other items were small.")
    shown = snippet(text, "capital expenditures 2018")
    assert "Capital expenditures were $1,577 million" in shown and len(shown) <= SNIPPET_WIDTH + 2
    assert shown.startswith("…")  # the opening it left out is marked
    assert snippet("Short text.", "anything") == "Short text."
    # no query word in it: the opening, as before
    assert snippet(text, "zebra").startswith("Item 7.")
