"""One Dagster instance per H3_HOME, shared by `make ui` and the `h3` CLI."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from h3.pipelines.dagster_storage import POSTGRES_URL_ENV
from h3_runtime.home import h3_home

REPO_ROOT = Path(__file__).resolve().parents[1]


def instance_yaml() -> bytes:
    """The repository's dagster.yaml; with $H3_POSTGRES_URL set, its storage names that server
    literally, so that every process handed this instance (dask workers get it by reference)
    stores in the same PostgreSQL whatever its own environment says."""
    text = (REPO_ROOT / "dagster.yaml").read_text()
    url = os.environ.get(POSTGRES_URL_ENV)
    if url:
        start = text.index("storage:\n")
        end = text.index("\n\n", start)
        text = text[:start] + f"storage:\n  postgres:\n    postgres_url: {json.dumps(url)}" + text[end:]
    return text.encode()


@contextmanager
def h3_home_env(home: Path) -> Iterator[Path]:
    """Points H3_HOME (and so the store and the Dagster instance) at `home` for the block, then
    restores the previous H3_HOME and DAGSTER_HOME (`ensure_dagster_home` sets the latter from
    the former; used by the benches and the tests)."""
    old = {k: os.environ.get(k) for k in ("H3_HOME", "DAGSTER_HOME")}
    os.environ["H3_HOME"] = str(home)
    try:
        yield home
    finally:
        for key, value in old.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def ensure_dagster_home() -> Path:
    """Points DAGSTER_HOME at $H3_HOME/dagster, with the repository's dagster.yaml in it."""
    home = h3_home() / "dagster"
    home.mkdir(parents=True, exist_ok=True)
    wanted = instance_yaml()
    target = home / "dagster.yaml"
    if not target.exists() or target.read_bytes() != wanted:
        tmp = target.with_suffix(f".tmp{os.getpid()}")
        tmp.write_bytes(wanted)
        os.replace(tmp, target)  # concurrent CLI commands never read half a file
    os.environ["DAGSTER_HOME"] = str(home)
    return home


def get_instance():
    """The persistent DagsterInstance of this H3_HOME (runs show in `make ui`)."""
    from dagster import DagsterInstance

    ensure_dagster_home()
    return DagsterInstance.get()


if __name__ == "__main__":  # used by `make ui`
    print(ensure_dagster_home())
