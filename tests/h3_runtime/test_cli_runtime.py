"""`h3 monitor --dump-scheduler-state`, `h3 corruption-test`, `h3 bandwidth-test`."""

from __future__ import annotations

import json

import pytest

from h3.pipelines.cli.main import main
from h3.pipelines.cli.output import CliError
from h3.pipelines.cli.runtime_tools import parse_size
from tests.h3_runtime.conftest import tiny_llama


def run_json(capsys, *argv: str) -> tuple[int, dict]:
    code = main([*argv, "--json"])
    return code, json.loads(capsys.readouterr().out)


def test_corruption_test_detects_every_flip(capsys):
    code, report = run_json(capsys, "corruption-test", "--iterations", "30")
    assert code == 0 and report["injected"] == 30 and report["detected"] == 30
    assert report["missed"] == 0 and set(report["by_path"]) == {"cold_file", "cold_read", "warm_to_hot"}


@pytest.mark.parametrize("tier", ["hot", "warm", "cold"])
def test_bandwidth_test_moves_the_requested_bytes(capsys, tier):
    code, report = run_json(capsys, "bandwidth-test", "--size", "4MB", "--tier", tier)
    assert code == 0 and report["tier"] == tier
    assert report["bytes"] <= 4_000_000 and report["bytes"] > 3_900_000 - report["block_bytes"]
    assert report["gb_per_s"] > 0


def test_bad_size_is_a_clear_error(capsys):
    assert main(["bandwidth-test", "--size", "12 parsecs"]) == 2
    assert "--size" in capsys.readouterr().err
    with pytest.raises(CliError):
        parse_size("0MB")
    assert parse_size("1GiB") == 2**30 and parse_size("64MB") == 64_000_000


def test_monitor_dumps_scheduler_state(capsys, tmp_path):
    folder = tmp_path / "tiny"
    tiny_llama(layers=2).save_pretrained(folder)
    budget_gb = 120 * 512 / 2**30  # 120 tokens of a 2-layer tiny model: forces the tiers
    config = tmp_path / "h3.yaml"
    config.write_text(f"runtime:\n  block_tokens: 16\n  cold_storage_path: {tmp_path / 'kv'}\n")
    code, state = run_json(capsys, "monitor", "--dump-scheduler-state", "--model", str(folder),
                           "--tokens", "400", "--hbm-size-gb", str(budget_gb), "--config", str(config))
    assert code == 0
    assert state["thresholds"]["hbm_threshold"] == 0.95
    assert state["thresholds"]["hot_threshold_in_force"] in (0.95, 0.98)
    tiers = state["blocks_per_tier"]  # hot blocks keep their warm / cold copy
    T = state["geometry"]["block_tokens"]  # 16 at most; a budget this small halves it
    assert T in (8, 16)
    assert tiers["warm"] + tiers["cold"] == 2 * (403 // T) and 0 < tiers["hot"] <= tiers["warm"] + tiers["cold"]
    assert state["layers"][0]["mode"] == "sparse"
    stats = state["stats"]
    assert stats["hot_peak_bytes"] <= stats["hot_budget_bytes"]
    assert "migrations" in stats and "prefetches" in stats and "hot_hit_rate" in stats


def test_monitor_says_why_the_tiers_are_empty_when_the_warm_up_fits(capsys, tmp_path):
    """A warm-up whose KV fits the hot budget stays exact: the dump is empty by design, and
    stderr says so and how to see the tiers at work."""
    folder = tmp_path / "tiny"
    tiny_llama(layers=2).save_pretrained(folder)
    config = tmp_path / "h3.yaml"
    config.write_text(f"runtime:\n  cold_storage_path: {tmp_path / 'kv'}\n")
    assert main(["monitor", "--dump-scheduler-state", "--model", str(folder), "--tokens", "64",
                 "--hbm-size-gb", "0.05", "--config", str(config), "--json"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["stats"]["mode"] == "exact"
    assert "fits the hot budget" in captured.err and "--hbm-size-gb" in captured.err


def test_monitor_reads_the_config_h3_ask_reads(capsys, tmp_path, monkeypatch):
    # without --config: $H3_CONFIG (else the repository's h3_config.yaml), not the code's defaults
    folder = tmp_path / "tiny"
    tiny_llama(layers=2).save_pretrained(folder)
    config = tmp_path / "h3.yaml"
    config.write_text(f"runtime:\n  cold_storage_path: {tmp_path / 'kv'}\nscheduler:\n  ahaz_alpha: 0.9\n")
    monkeypatch.setenv("H3_CONFIG", str(config))
    code, state = run_json(capsys, "monitor", "--dump-scheduler-state", "--model", str(folder),
                           "--tokens", "16", "--hbm-size-gb", "0.05")
    assert code == 0 and state["thresholds"]["ahaz_alpha"] == 0.9
    bad = tmp_path / "bad.yaml"  # (settings are cached per path)
    bad.write_text("scheduler:\n  ahaz_alpha: 1.5\n")
    monkeypatch.setenv("H3_CONFIG", str(bad))
    assert main(["monitor", "--model", str(folder), "--tokens", "16"]) == 2
    assert "scheduler.ahaz_alpha: must be <= 1.0" in capsys.readouterr().err


def test_monitor_bad_model_path(capsys, tmp_path):
    assert main(["monitor", "--model", str(tmp_path / "nope")]) == 2
    assert "does not exist" in capsys.readouterr().err
