"""The installed package: every product folder is listed under its h3.* name (setuptools finds
no package under a mapped name by itself, so a folder missing from pyproject.toml would be left
out of a wheel while the editable install still imports it)."""

from __future__ import annotations

import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
NAMESPACED = ("assets", "resources", "pipelines", "ontology")


def test_every_product_package_is_listed_under_its_installed_name():
    setuptools = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(setuptools["packages"])
    wanted = set()
    for top in (*NAMESPACED, "h3_runtime"):
        for init in (REPO / top).rglob("__init__.py"):
            name = ".".join(init.parent.relative_to(REPO).parts)
            wanted.add(name if top == "h3_runtime" else f"h3.{name}")
    assert wanted - listed == set()
    assert listed - wanted == set()
    assert setuptools["package-dir"] == {f"h3.{t}": t for t in NAMESPACED} | {"h3_runtime": "h3_runtime"}
