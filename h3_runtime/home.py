"""Where an H³ installation keeps its files: `H3_HOME` (default `./.h3`).

Everything the CLI, the pipelines and the runtime write goes under this folder, so two different
H3_HOMEs never interfere. (The Dagster instance under it is the pipeline's business:
`pipelines/instance.py`.)
"""

from __future__ import annotations

import os
import threading
from pathlib import Path


class H3HomeError(RuntimeError):
    """H3_HOME cannot be created or written."""


def h3_home(create: bool = True) -> Path:
    """The resolved H3_HOME. With `create`, makes it and checks it is writable (clear error if not)."""
    home = Path(os.environ.get("H3_HOME") or ".h3").expanduser().resolve()
    if create:
        try:
            home.mkdir(parents=True, exist_ok=True)
            # One probe name per process and thread: with a shared name, concurrent commands
            # (20 `h3 recall` at once) removed each other's probe and reported "not writable".
            probe = home / f".write-probe-{os.getpid()}-{threading.get_ident()}"
            probe.write_bytes(b"ok")
            probe.unlink(missing_ok=True)
        except OSError as exc:
            raise H3HomeError(f"H3_HOME {home} is not writable: {exc.strerror or exc}") from exc
    return home


def under_home(*parts: str) -> Path:
    """A path under H3_HOME; refuses any part that would escape it (`..`, absolute parts)."""
    home = h3_home()
    path = home.joinpath(*parts).resolve()
    if path != home and home not in path.parents:
        raise H3HomeError(f"refusing a path outside H3_HOME: {'/'.join(parts)!r}")
    return path
