"""docs/example_project: a user's own Dagster project, with its own `resources.py`, imports
`h3` and materialises an asset that recalls and asks (the public API of INTERFACES.md)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.assets._runtime_fixtures import copy_store, tiny_model_dir, write_config

pytestmark = pytest.mark.slow
PROJECT = Path(__file__).resolve().parents[2] / "docs" / "example_project"
RUN = """
import json
from dagster import materialize
from definitions import defs, revenue_review
import resources
result = materialize([revenue_review], resources=defs.resources)
assert result.success
print(json.dumps({"own_resources": resources.__file__,
                  "value": result.output_for_node("revenue_review")}))
"""


def test_the_example_project_materialises_an_asset_that_asks(ingested_sample, default_model_dir,
                                                              tmp_path):
    home = tmp_path / "h3"
    copy_store(ingested_sample["home"], home)
    config = write_config(tmp_path / "h3_config.yaml",
                          tiny_model_dir(default_model_dir, tmp_path / "tiny"))
    env = {**os.environ, "H3_HOME": str(home), "H3_CONFIG": str(config),
           "DAGSTER_HOME": str(tmp_path / "dagster"), "HF_HUB_OFFLINE": "1",
           "TRANSFORMERS_OFFLINE": "1", "PYTHONPATH": str(PROJECT)}
    (tmp_path / "dagster").mkdir()
    # run from the project's folder, not the repository root: only the installed h3.* exists
    done = subprocess.run([sys.executable, "-c", RUN], cwd=PROJECT, env=env, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert Path(out["own_resources"]).resolve() == PROJECT / "resources.py"
    value = out["value"]
    assert value["refused"] is False and value["quotes"]
    assert value["answer"] == value["quotes"][0]["text"]
    assert all(q["page"] >= 1 and q["source"] for q in value["quotes"])
