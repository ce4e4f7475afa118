"""One Dagster instance per H3_HOME, shared by `make ui` and the `h3` CLI."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from h3_runtime.home import h3_home

REPO_ROOT = Path(__file__).resolve().parents[1]


def ensure_dagster_home() -> Path:
    """Points DAGSTER_HOME at $H3_HOME/dagster, with the repository's dagster.yaml in it."""
    home = h3_home() / "dagster"
    home.mkdir(parents=True, exist_ok=True)
    template = REPO_ROOT / "dagster.yaml"
    target = home / "dagster.yaml"
    if template.exists() and (
        not target.exists() or target.read_bytes() != template.read_bytes()
    ):
        shutil.copyfile(template, target)
    os.environ["DAGSTER_HOME"] = str(home)
    return home


def get_instance():
    """The persistent DagsterInstance of this H3_HOME (runs show in `make ui`)."""
    from dagster import DagsterInstance

    ensure_dagster_home()
    return DagsterInstance.get()


if __name__ == "__main__":  # used by `make ui`
    print(ensure_dagster_home())
