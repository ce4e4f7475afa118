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
