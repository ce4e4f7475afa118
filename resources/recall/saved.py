"""What recall derives from the store once and keeps on disk between processes: a `h3 recall`
from the shell is a new process each time, and deriving these again costs most of its work
(the entity gazetteer ~0.3 s, the statement pages of the routed filings ~0.4 s, the documents'
profiles a PDF read each).

A saved file is a speed-up only: it is written whole or not at all (written beside, then
renamed: a reader never sees half a file), a torn or unreadable one is derived again, and a
home or store that cannot be written only loses the speed-up.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)


def cache_file(kind: str, *key: object) -> Path | None:
    """`$H3_HOME/cache/<kind>/<digest of key>.json`; None when H3_HOME cannot hold it."""
    from h3_runtime.home import H3HomeError, under_home

    digest = hashlib.sha256(repr(key).encode()).hexdigest()[:20]
    try:
        return under_home("cache", kind, f"{digest}.json")
    except (H3HomeError, OSError):
        return None


def read_saved(path: Path | None) -> Any | None:
    """The saved value, or None when there is none or it cannot be read (derived again)."""
    if path is None or not path.is_file():
        return None
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as exc:  # half-written by a process that died
        log.warning("%s unreadable (%s): derived again", path, exc)
        return None


def save(path: Path | None, value: Any, replaces_others: bool = False) -> None:
    """Writes `value` as JSON at `path`, whole or not at all. `replaces_others`: the other files
    of its folder are earlier versions of the same thing, never read again: deleted."""
    if path is None:
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if replaces_others:
            for old in path.parent.glob("*.json"):
                if old != path:
                    old.unlink(missing_ok=True)
        staged = path.with_name(f".{path.name}.{os.getpid()}.part")
        staged.write_text(json.dumps(value))
        staged.replace(path)
    except OSError as exc:
        log.warning("could not keep %s: %s (derived again next time)", path, exc)
