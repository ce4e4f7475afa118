"""`make ui` (pipelines/ui.py) stops cleanly: after SIGTERM no Dagster process it started is
left (webserver, daemon, code servers), within seconds rather than minutes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.request

import psutil
import pytest

from tests.ui.test_dagster_ui import _free_port


def wait_http(url: str, timeout_s: float, proc: subprocess.Popen | None = None) -> None:
    """Until `url` answers (or `proc`, if given, exits: then fail at once)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        assert proc is None or proc.poll() is None, "make ui's wrapper exited early"
        try:
            with urllib.request.urlopen(url, timeout=5):
                return
        except OSError:
            time.sleep(1)
    raise AssertionError(f"no answer from {url} in {timeout_s} s")


@pytest.mark.slow
def test_sigterm_leaves_no_dagster_process(tmp_path):
    port = str(_free_port())
    env = {**os.environ, "H3_HOME": str(tmp_path / "h3")}
    env.pop("DAGSTER_HOME", None)
    proc = subprocess.Popen([sys.executable, "-m", "h3.pipelines.ui", port], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        wait_http(f"http://127.0.0.1:{port}/server_info", 300, proc)
        family = psutil.Process(proc.pid).children(recursive=True)
        assert len(family) >= 3  # dagster dev, webserver, daemon (+ code servers)
        t0 = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0
        stopped_s = time.monotonic() - t0
        left = [p for p in family if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
        assert left == [], [p.cmdline()[:4] for p in left]
        assert stopped_s < 30, stopped_s
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        for p in psutil.Process().children(recursive=True):
            p.kill()
