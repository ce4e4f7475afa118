"""Shared pytest fixtures. Each area adds its own below with small edits."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

if os.environ.get("PYTEST_XDIST_WORKER"):
    # Two workers on two cores: one math thread each (and in the processes they start), or
    # torch's and onnxruntime's thread pools fight each other for the same cores.
    for _threads in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ.setdefault(_threads, "1")

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


@pytest.fixture
def machine_to_itself(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Runs the test while no other test holding this fixture runs (in any xdist worker). For
    the tests that fill both cores and GBs of memory with processes of their own (20 recalls at
    once, a dask cluster, a browser): two of them at once on a 2-core machine starve each
    other's timeouts and heartbeats (the scale-out test went from ~60 s alone to 680 s beside
    the concurrency test). The other worker waits here, then goes on."""
    if os.environ.get("PYTEST_XDIST_WORKER") is None:
        yield
        return
    from filelock import FileLock

    with FileLock(str(tmp_path_factory.getbasetemp().parent / "machine-to-itself.lock")):
        yield


def _built_once(factory: pytest.TempPathFactory, name: str,
                build: Callable[[Path], object]) -> tuple[Path, object]:
    """`build(folder)` run once per test session, even when pytest-xdist splits the session
    over worker processes (make test runs two): the first worker builds under a lock in the
    folder the workers share, the others wait and read what it wrote. (folder, build's
    JSON-able result)."""
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if worker is None:  # one process: nothing to share
        folder = factory.mktemp(name)
        return folder, build(folder)
    from filelock import FileLock

    shared = factory.getbasetemp().parent  # the same for every worker of this session
    folder, done = shared / name, shared / f"{name}.json"
    with FileLock(str(shared / f"{name}.lock")):
        if not done.exists():
            folder.mkdir(exist_ok=True)
            done.write_text(json.dumps(build(folder)))
    return folder, json.loads(done.read_text())


@pytest.fixture(scope="session")
def ingested_sample(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The sample corpus ingested once through Dagster (`h3 index-build`'s code path) into a
    session H3_HOME; tests that use it must only read. {"home", "corpus", "report"}."""
    from h3.pipelines.cli.index_build import ingest

    def build(base: Path) -> dict:
        shutil.copytree(SAMPLE_CORPUS, base / "corpus")
        with h3_home_env(base / "h3"):
            return ingest([str(base / "corpus")], compress=True)  # the compressed layer too

    base, report = _built_once(tmp_path_factory, "ingested", build)
    return {"home": base / "h3", "corpus": base / "corpus", "report": report}


@pytest.fixture(scope="session")
def default_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The default runtime model converted once per session (h3_runtime.models, ~20-40 s); or
    $H3_TEST_MODEL_DIR when it points at an already converted copy (faster local loops)."""
    given = os.environ.get("H3_TEST_MODEL_DIR")
    if given and (Path(given) / "model.safetensors").exists():
        return Path(given)
    from h3_runtime.models import ensure_default_model

    def build(home: Path) -> str:
        with h3_home_env(home):
            return str(ensure_default_model())

    return Path(_built_once(tmp_path_factory, "model-home", build)[1])
