"""The test fixtures some benches build their corpora from (`tests/fixtures/*.py`), loaded by
file path.

`tests` is not an installed package: `from tests.fixtures... import` works only where the
checkout's root is on `sys.path` (pytest, `python -m` run from the root), so `h3 bench
--scenario relation` and `--scenario chinese` failed with "No module named 'tests'" from the
`h3` command itself."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

FIXTURES = Path(__file__).resolve().parents[2] / "tests" / "fixtures"


def fixture_module(name: str) -> ModuleType:
    """tests/fixtures/<name>.py as a module (loaded once per process)."""
    key = f"h3_bench_fixtures.{name}"
    if key in sys.modules:
        return sys.modules[key]
    path = FIXTURES / f"{name}.py"
    if not path.is_file():
        raise FileNotFoundError(f"{path}: this bench builds its corpus from that fixture; run it "
                                "from a checkout of the repository")
    spec = importlib.util.spec_from_file_location(key, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[key] = module  # before running it: its dataclasses look their module up
    spec.loader.exec_module(module)
    return module
