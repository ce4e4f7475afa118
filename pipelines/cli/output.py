"""How every `h3` subcommand talks: JSON on stdout with --json, logs and progress on stderr,
a one-line reason on stderr and a non-zero exit on failure."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")


class CliError(Exception):
    """A failure the user can act on; main() prints `h3: <message>` and exits 2."""


def emit(obj: Any, as_json: bool, human: str | None = None) -> None:
    """Writes the result: JSON to stdout with --json, else the human text (or pretty JSON)."""
    if as_json:
        json.dump(obj, sys.stdout, ensure_ascii=False, default=_jsonable)
        sys.stdout.write("\n")
    else:
        print(human if human is not None else json.dumps(obj, indent=2, default=_jsonable))
    sys.stdout.flush()


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def progress(items: Iterable[T], total: int, label: str, enabled: bool) -> Iterator[T]:
    """A progress bar on stderr, only when it is a terminal and the output is not JSON."""
    show = enabled and sys.stderr.isatty()
    for i, item in enumerate(items, 1):
        yield item
        if show:
            width = 30
            done = int(width * i / max(total, 1))
            sys.stderr.write(f"\r{label} [{'#' * done}{'.' * (width - done)}] {i}/{total}")
            sys.stderr.flush()
    if show:
        sys.stderr.write("\n")


def _jsonable(value: Any) -> Any:
    if hasattr(value, "tolist"):
        return value.tolist()
    if hasattr(value, "__fspath__"):
        return str(value)
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


class Progress:
    """Progress of a long loop on stderr: a redrawn line on a terminal (files done, pages/s,
    ETA), a plain line per step when stderr is a file or a pipe, nothing when disabled (--json:
    stderr is for logs and errors only)."""

    def __init__(self, total: int, label: str, enabled: bool) -> None:
        self.total, self.label = total, label
        self.enabled = enabled and total > 0
        self.tty = sys.stderr.isatty()
        self.done = self.pages = 0
        self.t0 = time.monotonic()
        if self.enabled:
            self._write(f"{label}: {total} files to ingest")

    def advance(self, files: int, pages: int = 0) -> None:
        self.done += files
        self.pages += pages
        if self.enabled:
            self._write(self.line(time.monotonic() - self.t0))

    def line(self, elapsed: float) -> str:
        rate = self.pages / elapsed if elapsed > 0 else 0.0
        left = (self.total - self.done) * elapsed / self.done if self.done else 0.0
        eta = f"ETA {_duration(left)}" if self.done < self.total else f"in {_duration(elapsed)}"
        return (f"{self.label}: {self.done}/{self.total} files, {self.pages} pages, "
                f"{rate:.1f} pages/s, {eta}")

    def close(self) -> None:
        if self.enabled and self.tty:
            sys.stderr.write("\n")
            sys.stderr.flush()

    def _write(self, text: str) -> None:
        if self.tty:
            sys.stderr.write(f"\r\033[K{text}")
        else:
            sys.stderr.write(text + "\n")
        sys.stderr.flush()


# What each per-document stage has done to a document, for the progress lines.
STAGE_DONE = {"documents": "checked", "layout": "layout read", "tables": "tables read",
              "figures": "figures found", "ocr": "OCR done", "chunks": "chunked",
              "embeddings": "embedded", "cold_store": "stored", "knowledge_graph": "graph built",
              "structures": "structures indexed", "figure_embeddings": "figures embedded",
              "token_vectors": "token vectors"}


class DocumentProgress:
    """One line on stderr per document as a stage of the run finishes it, e.g.
    `[3/13] report.pdf: stored (42 pages, 5.1 s; stage 7 ETA 1m10s)`: the document's place
    among the files to ingest, what the stage did, its pages, the stage's seconds on it, the
    stage's place in the run (`7/11` once a run has shown how many there are), and how long the
    stage needs for the run's remaining documents (their pages at its pace so far; `stage 7
    done` on its last). On a terminal the line is redrawn in place (each stage's last one
    stays); a document's failure is its own line, once. Fed by assets._batch.document_listener
    (stages that run in this process)."""

    def __init__(self, files_of: dict[str, str]) -> None:
        """`files_of`: doc_id -> file of every document to ingest, in order (a document's place
        is its place there, across batches)."""
        self.files_of = files_of
        self.place = {d: i for i, d in enumerate(files_of, 1)}
        self.tty = sys.stderr.isatty()
        self.pages: dict[str, int] = {}
        self.failed: set[str] = set()
        self.runs: dict[frozenset, dict[str, list[float]]] = {}  # stage -> [seconds, pages]

    def __call__(self, event: dict) -> None:
        text = self.line(event)
        if text:
            sys.stderr.write(text)
            sys.stderr.flush()

    def line(self, event: dict) -> str:
        """What to write for `event` (assets._batch.document_done), "" for nothing."""
        doc_id, stage, ids = event["doc_id"], event["stage"], event["doc_ids"]
        if isinstance(event.get("pages"), int):
            self.pages[doc_id] = event["pages"]
        name = Path(self.files_of.get(doc_id) or doc_id).name
        head = (f"[{self.place[doc_id]}/{len(self.place)}] {name}" if doc_id in self.place
                else f"[{event['index']}/{len(ids)}] {name}")
        if event["status"] != "ok":
            if doc_id in self.failed:  # a later stage passing the failure on
                return ""
            self.failed.add(doc_id)
            return ("\r\033[K" if self.tty else "") + (
                f"{head}: failed at {stage}: {event.get('reason') or 'no reason given'}\n")
        run = frozenset(ids)
        known = max((len(s) for r, s in self.runs.items() if r != run), default=0)  # earlier
        stages = self.runs.setdefault(run, {})
        spent = stages.setdefault(stage, [0.0, 0.0])
        seconds = float(event.get("seconds") or 0.0)
        spent[0] += seconds
        spent[1] += self.pages.get(doc_id, 1)
        left = [d for d in ids[event["index"]:] if d not in self.failed]
        eta = spent[0] / spent[1] * sum(self.pages.get(d, 1) for d in left) if spent[1] else 0.0
        pages = f"{self.pages[doc_id]} pages, " if doc_id in self.pages else ""
        number = list(stages).index(stage) + 1
        place = f"stage {number}" + (f"/{known}" if known >= number else "")
        text = (f"{head}: {STAGE_DONE.get(stage, stage)} ({pages}{seconds:.1f} s; {place} "
                + (f"ETA {_duration(eta)})" if left else "done)"))
        if not self.tty:
            return text + "\n"
        return f"\r\033[K{text}" + ("" if left else "\n")


def _duration(seconds: float) -> str:
    seconds = int(round(seconds))
    return f"{seconds // 60}m{seconds % 60:02d}s" if seconds >= 60 else f"{seconds}s"
