"""`h3 bench --scenario code --quick` with the real default model: the side-by-side report, its
plot, and the reuse targets it checks (exact prefix reuse, cold hit not slower)."""

from __future__ import annotations

import json
import os

import pytest
import yaml

from h3.pipelines.cli.main import main
from tests.conftest import h3_home_env

pytestmark = pytest.mark.slow


def test_code_scenario_quick(default_model_dir, tmp_path, capsys):
    config = tmp_path / "h3_config.yaml"
    config.write_text(yaml.safe_dump({"model": {"path": str(default_model_dir)}}))
    old = os.environ.get("H3_CONFIG")
    os.environ["H3_CONFIG"] = str(config)
    try:
        with h3_home_env(tmp_path / "h3"):
            code = main(["bench", "--scenario", "code", "--quick", "--out",
                         str(tmp_path / "out"), "--json"])
    finally:
        if old is None:
            os.environ.pop("H3_CONFIG", None)
        else:
            os.environ["H3_CONFIG"] = old
    assert code == 0
    report = json.loads(capsys.readouterr().out)["scenarios"]["code"]
    assert set(report["variants"]) == {"full_attention", "full_attention_cold_reuse",
                                       "h3_no_reuse", "h3_cold_reuse"}
    reused = report["variants"]["h3_cold_reuse"]
    assert reused["kv_tokens_loaded_cold"] == report["doc_tokens"] > 100
    assert report["cold_reuse_answers_token_equal"] is True
    assert report["variants"]["full_attention_cold_reuse"]["ttft_s"] < report["variants"][
        "full_attention"]["ttft_s"]
    assert (tmp_path / "out" / "code.png").stat().st_size > 10_000
