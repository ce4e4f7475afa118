"""How every `h3` subcommand talks: JSON on stdout with --json, logs and progress on stderr,
a one-line reason on stderr and a non-zero exit on failure."""

from __future__ import annotations

import json
import sys
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
