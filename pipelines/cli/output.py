"""How every `h3` subcommand talks: JSON on stdout with --json, logs and progress on stderr,
a one-line reason on stderr and a non-zero exit on failure."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterable, Iterator
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


def _duration(seconds: float) -> str:
    seconds = int(round(seconds))
    return f"{seconds // 60}m{seconds % 60:02d}s" if seconds >= 60 else f"{seconds}s"
