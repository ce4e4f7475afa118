"""Reading `h3 recall --queries-file F`: one query a line, JSONL objects with a `query` field
(a line that starts with `{`), or a JSON array of such strings/objects. Every bad input is a
CliError naming the file and, where it applies, the line (never a traceback)."""

from __future__ import annotations

import json
from pathlib import Path

from h3.pipelines.cli.output import CliError

NEWLINE = b"\n"


def read_queries(path: str) -> list[str]:
    """The queries of the file, in order; blank lines are skipped."""
    label = f"--queries-file {path}"
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise CliError(f"{label}: {exc.strerror or exc}") from exc
    nul = data.find(b"\0")
    if nul >= 0:
        line = data[:nul].count(NEWLINE) + 1
        raise CliError(f"{label} line {line}: a binary file, not text "
                       f"(NUL byte at offset {nul}); give one query a line or JSONL")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(NEWLINE) + 1
        raise CliError(f"{label} line {line}: not UTF-8 text (byte 0x{data[exc.start]:02x}); "
                       "save the file as UTF-8") from exc
    if text.lstrip().startswith("["):
        return _array(text, label)
    out: list[str] = []
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line:
            continue
        if not line.startswith("{"):
            out.append(line)
            continue
        try:
            obj = json.loads(line)
        except ValueError as exc:
            raise CliError(f"{label} line {number}: not valid JSON ({_why(exc)}); JSONL is one "
                           "object a line") from exc
        out.append(_query_of(obj, f"{label} line {number}"))
    return out


def _array(text: str, label: str) -> list[str]:
    """A JSON array file: each item a query string or an object with a `query` field."""
    try:
        items = json.loads(text)
    except ValueError as exc:
        raise CliError(f"{label}: starts with '[' but is not a valid JSON array "
                       f"({_why(exc)})") from exc
    if not isinstance(items, list):
        raise CliError(f"{label}: expected a JSON array of queries")
    return [item if isinstance(item, str) else _query_of(item, f"{label} item {i}")
            for i, item in enumerate(items, 1)]


def _query_of(obj: object, where: str) -> str:
    if not isinstance(obj, dict):
        raise CliError(f"{where}: expected a string or an object with a \"query\" field, got "
                       f"{type(obj).__name__}")
    if "query" not in obj:
        raise CliError(f"{where}: no \"query\" field (fields: {', '.join(map(str, obj)) or '-'})")
    if not isinstance(obj["query"], str):
        raise CliError(f"{where}: \"query\" must be a string, got "
                       f"{type(obj['query']).__name__}")
    return obj["query"]


def _why(exc: ValueError) -> str:
    return exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)
