"""The benches that build their corpora from tests/fixtures load them by path, so they run from
the `h3` command too: it finds the checkout's benchmarks/ itself (pipelines/cli/bench.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_relation_and_chinese_benches_load_their_fixtures_outside_the_checkout_root(tmp_path):
    """Run from another directory with the repository off sys.path, as the installed `h3` command
    runs: `h3 bench`'s entry point finds benchmarks/, and the fixture modules load by path."""
    code = (f"import sys; sys.path = [p for p in sys.path if p not in ('', {str(REPO)!r})]\n"
            "try:\n    import benchmarks\nexcept ImportError:\n    print('not importable')\n"
            "from h3.pipelines.cli.bench import _benchmarks_cli\n"
            "assert _benchmarks_cli() is not None\n"
            "import benchmarks.documents.relation\n"
            "from benchmarks.documents.fixtures import fixture_module\n"
            "assert callable(fixture_module('news_corpus').write_set)\n"
            "assert callable(fixture_module('chinese_corpus').build)\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "not importable" in out.stdout  # the premise: benchmarks/ is not installed


def test_a_missing_fixture_is_named(tmp_path, monkeypatch):
    import pytest

    import benchmarks.documents.fixtures as fixtures

    monkeypatch.setattr(fixtures, "FIXTURES", tmp_path)
    with pytest.raises(FileNotFoundError, match="no_such_corpus.py"):
        fixtures.fixture_module("no_such_corpus")
