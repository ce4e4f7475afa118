"""Shared pytest fixtures. Each area adds its own below with small edits."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from h3.pipelines.instance import h3_home_env  # noqa: F401  (re-exported for the tests)

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

FIXTURES = Path(__file__).resolve().parent / "fixtures"
SAMPLE_CORPUS = FIXTURES / "sample_corpus"
DOCLING_PDFS = Path(__file__).resolve().parents[1].parent / "shared/corpora/docling-tests/pdf"




@pytest.fixture
def h3_home(tmp_path: Path) -> Iterator[Path]:
    """A private, empty H3_HOME for one test."""
    with h3_home_env(tmp_path / "h3") as home:
        yield home


@pytest.fixture
def sample_corpus(tmp_path: Path) -> Path:
    """A writable copy of the committed sample corpus (tests may change files in it)."""
    target = tmp_path / "corpus"
    shutil.copytree(SAMPLE_CORPUS, target)
    return target


@pytest.fixture(scope="session")
def ingested_sample(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The sample corpus ingested once through Dagster (`h3 index-build`'s code path) into a
    session H3_HOME; tests that use it must only read. {"home", "corpus", "report"}."""
    from h3.pipelines.cli.index_build import ingest

    base = tmp_path_factory.mktemp("ingested")
    corpus = base / "corpus"
    shutil.copytree(SAMPLE_CORPUS, corpus)
    with h3_home_env(base / "h3") as home:
        report = ingest([str(corpus)], compress=True)  # the compressed layer too
    return {"home": home, "corpus": corpus, "report": report}


@pytest.fixture(scope="session")
def default_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The default runtime model converted once per session (h3_runtime.models, ~20-40 s); or
    $H3_TEST_MODEL_DIR when it points at an already converted copy (faster local loops)."""
    given = os.environ.get("H3_TEST_MODEL_DIR")
    if given and (Path(given) / "model.safetensors").exists():
        return Path(given)
    from h3_runtime.models import ensure_default_model

    with h3_home_env(tmp_path_factory.mktemp("model-home")):
        return ensure_default_model()
