"""`h3 index-build` says how far it is inside a batch (issue 37): a line on stderr per document
as each stage finishes it (`[2/3] lab_handbook.pdf: stored (2 pages, 0.1 s; stage 7 ETA 1s)`);
with --json, stdout is the report alone."""

from __future__ import annotations

import json
import re

from h3.pipelines.cli.output import DocumentProgress


def _event(stage, doc_id, index, ids, seconds, pages=None, status="ok", reason=None):
    return {"stage": stage, "doc_id": doc_id, "index": index, "doc_ids": ids, "status": status,
            "reason": reason, "pages": pages, "seconds": seconds}


def test_a_line_per_document_with_pages_seconds_stage_and_eta():
    ids = ["a", "b", "c"]
    files = {"a": "/in/a.pdf", "b": "/in/report.pdf", "c": "/in/c.pdf", "d": "/in/d.pdf"}
    progress = DocumentProgress(files)
    progress.tty = False
    lines = [progress.line(_event("documents", d, i, ids, 0.1, pages=p))
             for i, (d, p) in enumerate(zip(ids, [10, 42, 20], strict=True), 1)]
    assert lines[0] == "[1/4] a.pdf: checked (10 pages, 0.1 s; stage 1 ETA 0s)\n"
    assert lines[2] == "[3/4] c.pdf: checked (20 pages, 0.1 s; stage 1 done)\n"
    # the next stage: 5 s on 10 pages, so the 62 pages left take 31 s
    assert progress.line(_event("layout", "a", 1, ids, 5.0)) == (
        "[1/4] a.pdf: layout read (10 pages, 5.0 s; stage 2 ETA 31s)\n")
    failed = _event("layout", "b", 2, ids, 0.5, status="failed", reason="/in/report.pdf: bad")
    assert progress.line(failed) == "[2/4] report.pdf: failed at layout: /in/report.pdf: bad\n"
    assert progress.line({**failed, "stage": "chunks"}) == ""  # passed on: said once
    # a failed document is not waited for: c is the stage's last
    assert progress.line(_event("layout", "c", 3, ids, 100.0)).endswith("; stage 2 done)\n")
    assert progress.line(_event("cold_store", "c", 3, ids, 0.2)) == (
        "[3/4] c.pdf: stored (20 pages, 0.2 s; stage 3 done)\n")
    # the next batch (a run of its own): the first run said how many stages there are
    assert progress.line(_event("documents", "d", 1, ["d"], 0.1, pages=3)) == (
        "[4/4] d.pdf: checked (3 pages, 0.1 s; stage 1/3 done)\n")


def test_index_build_prints_each_file_as_stages_finish_it(h3_home, sample_corpus, capsys):
    from h3.pipelines.cli.main import main

    files = sorted(p.name for p in sample_corpus.glob("*.pdf"))
    assert main(["index-build", "--path", str(sample_corpus), "--batch-size", "2"]) == 0
    err = capsys.readouterr().err
    stored = re.findall(r"^\[(\d)/3\] (\S+): stored \((\d+) pages, [\d.]+ s; stage (\d+)(/\d+)? "
                        r"(ETA \d+s|done)\)$", err, re.M)
    assert sorted(name for _, name, *_ in stored) == files, err
    assert sorted(int(i) for i, *_ in stored) == [1, 2, 3]
    # batches of 2: a run's last document finishes its stage ("done"), the other has an ETA
    assert sorted(s[-1][:3] for s in stored) == ["ETA", "don", "don"], stored
    # the second run knows how many stages a run has from the first
    assert sorted(s[4] != "" for s in stored) == [False, False, True], stored
    first_run = err[:err.index("; stage 1/")]
    numbers = [int(n) for n in re.findall(r"; stage (\d+)", first_run)]
    assert numbers == sorted(numbers) and numbers[-1] >= 10, first_run  # in the order they ran
    for verb in ("checked", "layout read", "chunked", "embedded", "token vectors"):
        assert len(re.findall(rf"^\[\d/3\] \S+: {verb} \(", err, re.M)) == 3, (verb, err)


def test_json_output_stays_clean(h3_home, sample_corpus, capsys):
    from h3.pipelines.cli.main import main

    (sample_corpus / "field_notes_scan.pdf").unlink()
    (sample_corpus / "lab_handbook.pdf").unlink()
    assert main(["index-build", "--path", str(sample_corpus), "--json"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["ok"] == 1
    assert "stored (" not in captured.out + captured.err
