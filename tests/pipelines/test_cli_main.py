"""The `h3` entry point: every subcommand in INTERFACES.md is listed and accepts --json."""

import subprocess
import sys

import pytest

INTERFACE_COMMANDS = [
    "index-build", "recall", "ask", "stats", "list", "delete", "monitor", "bench", "corruption-test",
    "bandwidth-test",
]


def test_help_lists_every_interface_command():
    out = subprocess.run(
        [sys.executable, "-m", "pipelines.cli.main", "--help"], capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    for command in INTERFACE_COMMANDS:
        assert command in out.stdout


@pytest.mark.parametrize("command", INTERFACE_COMMANDS)
def test_every_command_accepts_json(command):
    out = subprocess.run(
        [sys.executable, "-m", "pipelines.cli.main", command, "--help"],
        capture_output=True, text=True,
    )
    assert out.returncode == 0, out.stderr
    assert "--json" in out.stdout


@pytest.mark.parametrize("value", ["4k", "100", ""])
def test_bench_lengths_rejects_a_bad_value_naming_the_flag(value):
    out = subprocess.run(
        [sys.executable, "-m", "pipelines.cli.main", "bench", "--scenario", "ruler",
         "--lengths", value, "--out", "/nonexistent/never-created"],
        capture_output=True, text=True,
    )
    assert out.returncode == 2 and "--lengths" in out.stderr, out.stderr


def test_bench_lengths_are_parsed_as_token_counts():
    from pipelines.cli.bench import _lengths

    assert _lengths("8192,4096") == [8192, 4096]
