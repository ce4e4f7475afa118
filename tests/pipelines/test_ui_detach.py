"""`python -m h3.pipelines.ui --detach` (make ui-detach): the server outlives the shell that
started it (own session; a hangup of the shell's process group does not reach it), is recorded in
$H3_HOME/ui/ui.pid with its log in $H3_HOME/ui/dagster.log, and `--stop` (make ui-stop) ends its
whole process group."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import psutil
import pytest

from tests.pipelines.test_ui_stop import wait_http
from tests.ui.test_dagster_ui import _free_port

# A stand-in for `dagster dev` (which takes a minute to start here): a leader with one child.
FAKE_DAGSTER = textwrap.dedent("""
    import subprocess, sys, time
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
    print("fake dagster up", child.pid, flush=True)
    time.sleep(300)
""")

# Runs the real ui.main with the fake `dagster dev` command.
DRIVER = textwrap.dedent("""
    import sys
    from h3.pipelines import ui
    ui.dagster_dev_command = lambda host, port: [sys.executable, {fake!r}]
    sys.exit(ui.main(sys.argv[1:]))
""")


def _alive(pid: int) -> bool:
    try:
        p = psutil.Process(pid)
        return p.is_running() and p.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _wait_for(predicate, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.2)
    return predicate()


def _shell(command: str, env: dict) -> subprocess.CompletedProcess:
    """Runs `command` in a shell that is its own process group, waits for the shell to exit, then
    hangs up that group as a closing terminal would."""
    proc = subprocess.Popen(["bash", "-c", command], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    out, err = proc.communicate(timeout=60)
    try:
        os.killpg(proc.pid, signal.SIGHUP)
    except ProcessLookupError:
        pass  # nothing left in the shell's group: what --detach is for
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def _kill_recorded(home) -> None:
    pid_path = home / "ui" / "ui.pid"
    if pid_path.exists():
        pid = json.loads(pid_path.read_text())["pid"]
        try:
            os.killpg(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def test_detach_survives_its_shell_and_stop_ends_the_group(tmp_path, monkeypatch, capsys):
    from h3.pipelines import ui

    home = tmp_path / "h3"
    fake = tmp_path / "fake_dagster.py"
    fake.write_text(FAKE_DAGSTER)
    driver = tmp_path / "driver.py"
    driver.write_text(DRIVER.format(fake=str(fake)))
    env = {**os.environ, "H3_HOME": str(home)}
    env.pop("DAGSTER_HOME", None)
    monkeypatch.setenv("H3_HOME", str(home))
    monkeypatch.setattr(ui, "dagster_dev_command", lambda host, port: [sys.executable, str(fake)])
    try:
        started = _shell(f"{sys.executable} {driver} 3999 --detach; exit 0", env)
        assert started.returncode == 0, started.stderr
        record = json.loads((home / "ui" / "ui.pid").read_text())
        pid = record["pid"]
        log = home / "ui" / "dagster.log"
        assert record["log"] == str(log)
        assert "http://127.0.0.1:3999" in started.stdout
        assert f"pid {pid}" in started.stdout and str(log) in started.stdout
        time.sleep(1.0)  # the hangup had time to land
        assert _alive(pid), "the detached server died with its shell"
        assert os.getsid(pid) == pid  # its own session: no terminal's hangup reaches it
        assert _wait_for(lambda: "fake dagster up" in log.read_text(), 30), log.read_text()
        child = int(log.read_text().split("fake dagster up")[1].split()[0])
        assert _alive(child)

        capsys.readouterr()
        assert ui.main(["3999", "--detach"]) == 1  # one server per H3_HOME
        assert "already running" in capsys.readouterr().err
        assert json.loads((home / "ui" / "ui.pid").read_text())["pid"] == pid

        assert ui.main(["--stop"]) == 0  # not our child: stopped through the PID file
        assert f"stopping Dagster (pid {pid})" in capsys.readouterr().err
        assert _wait_for(lambda: not _alive(pid) and not _alive(child), 10)
        assert not (home / "ui" / "ui.pid").exists()
        assert ui.main(["--stop"]) == 0
        assert "no detached Dagster UI" in capsys.readouterr().err
    finally:
        _kill_recorded(home)


def test_stale_pid_file_is_not_taken_for_a_server(tmp_path, monkeypatch):
    from h3.pipelines import ui

    monkeypatch.setenv("H3_HOME", str(tmp_path / "h3"))
    # This very process, under a wrong start time: a reused pid, not the server.
    ui.pid_file().write_text(json.dumps({"pid": os.getpid(), "create_time": 1.0,
                                         "url": "http://x", "log": "x"}))
    assert ui.running_detached() is None
    assert not ui.pid_file().exists()
    assert ui.main(["--stop"]) == 0  # nothing to stop; this process was not signalled
    assert ui.main(["--bogus"]) == 2


@pytest.mark.slow
def test_real_dagster_detached_then_stopped(tmp_path):
    port = str(_free_port())
    home = tmp_path / "h3"
    env = {**os.environ, "H3_HOME": str(home)}
    env.pop("DAGSTER_HOME", None)
    run = f"{sys.executable} -m h3.pipelines.ui"
    try:
        started = _shell(f"{run} {port} --detach; exit 0", env)
        assert started.returncode == 0, started.stderr
        pid = json.loads((home / "ui" / "ui.pid").read_text())["pid"]
        wait_http(f"http://127.0.0.1:{port}/server_info", 300)  # the shell is long gone
        leader = psutil.Process(pid)
        family = leader.children(recursive=True)
        assert len(family) >= 2  # webserver, daemon (+ code servers)
        stopped = _shell(f"{run} --stop", env)
        assert stopped.returncode == 0, stopped.stderr
        left = [p for p in [*family, leader] if _alive(p.pid)]
        assert left == [], [p.cmdline()[:4] for p in left]
    finally:
        _kill_recorded(home)
