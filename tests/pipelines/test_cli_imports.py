"""`h3 recall` from the shell stays fast: its command module, recall and the query encoder never
import torch (~1.7 s on 2 cores) or Dagster (~0.7 s). Each check runs in a fresh interpreter,
since this test process has imported both already."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

HEAVY = ("torch", "dagster")


def _fresh(code: str, home: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "H3_HOME": str(home)}
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, timeout=600)


def _heavy_imported(code: str, home: Path) -> list[str]:
    heavy = repr(set(HEAVY))
    probe = f"{code}\nimport sys\nprint(sorted({{m.split('.')[0] for m in sys.modules}} & {heavy}))"
    done = _fresh(probe, home)
    assert done.returncode == 0, done.stderr
    return eval(done.stdout.strip().splitlines()[-1])


def test_recall_command_imports_neither_torch_nor_dagster(tmp_path: Path) -> None:
    code = ("from h3.pipelines.cli.main import build_parser\n"
            "build_parser(only='recall')\n"
            "import h3.pipelines.cli.recall, h3.resources.recall, h3.resources.store\n"
            "import h3.resources.models.embedder")
    assert _heavy_imported(code, tmp_path) == []


def test_query_encoding_imports_neither_once_the_graph_exists(tmp_path: Path) -> None:
    encode = ("from h3.resources.models.embedder import get_embedder\n"
              "v = get_embedder('cpu').encode(['capital expenditure in 2022'])\n"
              "assert v.shape == (1, 384) and abs(float((v * v).sum()) - 1) < 1e-4\n")
    first = _fresh(encode, tmp_path)  # exports the onnx graph once (that one needs torch)
    assert first.returncode == 0, first.stderr
    assert _heavy_imported(encode, tmp_path) == []


def test_the_probe_can_fail(tmp_path: Path) -> None:
    assert _heavy_imported("import h3.resources.models.minilm", tmp_path) == ["torch"]


def test_the_embedder_module_has_no_dagster_resource() -> None:
    """The resource moved to embedder_resource.py; embedder.py stays Dagster-free."""
    import h3.resources.models.embedder as embedder
    from h3.resources.models.embedder_resource import SbertEmbedderResource

    assert not hasattr(embedder, "SbertEmbedderResource")
    assert SbertEmbedderResource().get_embedder().dim == embedder.EMBEDDING_DIM
