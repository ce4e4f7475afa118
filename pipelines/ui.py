"""`make ui`: `dagster dev` on this H3_HOME's instance, stopped cleanly on SIGTERM, SIGINT or
SIGHUP, or when the process that started it (make, a shell) goes away.

Why a wrapper: `dagster dev` maps SIGTERM to its Ctrl-C path, which waits up to 60 s for each
service, and a SIGTERM sent to `make` never reaches it at all (make dies, dagster dev and its
webserver, daemon and code servers run on). Here Dagster runs in its own process group; a stop
asks it to shut down (SIGINT), waits GRACE_S, then ends whatever is left of the group and of its
descendants (SIGTERM, then SIGKILL), so no Dagster process outlives `make ui`.

`--detach` (for a server that outlives the shell that started it; nohup does not do it, the
wrapper stops Dagster when its parent goes away): starts `dagster dev` in its own session, its
output in $H3_HOME/ui/dagster.log, its pid in $H3_HOME/ui/ui.pid, prints the URL, pid and log and
returns. `--stop` (`make ui-stop`) stops that process group the same way as above.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil

from h3.pipelines.instance import REPO_ROOT, ensure_dagster_home
from h3_runtime.home import h3_home

GRACE_S = 10.0  # Dagster's own shutdown; it usually takes 2-5 s
KILL_WAIT_S = 5.0


def dagster_dev_command(host: str, port: str) -> list[str]:
    dagster = Path(sys.executable).with_name("dagster")
    return [str(dagster), "dev", "-h", host, "-p", port, "-w", str(REPO_ROOT / "workspace.yaml")]


def stop_tree(proc: subprocess.Popen, grace_s: float = GRACE_S) -> list[int]:
    """Stops `proc` (the leader of its own process group) and all its descendants; returns the
    pids that had to be killed after the grace period."""
    killed = stop_group(proc.pid, grace_s)
    if proc.poll() is None:
        proc.wait(timeout=KILL_WAIT_S)
    return killed


def stop_group(pid: int, grace_s: float = GRACE_S) -> list[int]:
    """Stops process `pid` (the leader of its own process group, our child or not) and all its
    descendants: SIGINT to the group, then SIGTERM and SIGKILL for what is left after
    `grace_s`; returns the pids that had to be killed."""
    leader = _process(pid)
    try:
        family = leader.children(recursive=True) if leader is not None else []
    except psutil.NoSuchProcess:
        family = []
    _signal_group(pid, signal.SIGINT)
    if leader is not None:
        try:
            leader.wait(timeout=grace_s)
        except psutil.TimeoutExpired:
            pass
    alive = [p for p in [*family, leader] if p is not None and _running(p)]
    for p in alive:
        _send(p, signal.SIGTERM)
    _, alive = psutil.wait_procs(alive, timeout=KILL_WAIT_S)
    for p in alive:
        _send(p, signal.SIGKILL)
    psutil.wait_procs(alive, timeout=KILL_WAIT_S)
    return [p.pid for p in alive]


def default_host() -> str:
    """Localhost unless H3_UI_HOST says otherwise: the webserver has no authentication."""
    return os.environ.get("H3_UI_HOST", "127.0.0.1")


def ui_dir() -> Path:
    """$H3_HOME/ui: the detached server's PID file and log."""
    path = h3_home() / "ui"
    path.mkdir(parents=True, exist_ok=True)
    return path


def pid_file() -> Path:
    return ui_dir() / "ui.pid"


def log_file() -> Path:
    return ui_dir() / "dagster.log"


def running_detached() -> dict | None:
    """The PID file's record if the process it names still runs (the same process: its start
    time is checked, so a reused pid is not taken for it), else None (a stale file is removed)."""
    path = pid_file()
    try:
        record = json.loads(path.read_text())
        proc = psutil.Process(int(record["pid"]))
        same = abs(proc.create_time() - float(record["create_time"])) < 1.0
    except FileNotFoundError:
        return None
    except (ValueError, KeyError, TypeError, psutil.NoSuchProcess):
        same = False
    if same and _running(proc):
        return record
    path.unlink(missing_ok=True)
    return None


def detach(host: str, port: str) -> int:
    """Starts `dagster dev` in its own session (so no hangup or exit of this shell reaches it),
    records it in the PID file and returns at once."""
    record = running_detached()
    if record is not None:
        print(f"h3 ui: already running: {record['url']} (pid {record['pid']}, log "
              f"{record['log']}); stop it with `python -m h3.pipelines.ui --stop`",
              file=sys.stderr, flush=True)
        return 1
    home = ensure_dagster_home()
    log = log_file()
    with open(log, "ab") as out, open(os.devnull, "rb") as devnull:
        proc = subprocess.Popen(dagster_dev_command(host, port), cwd=REPO_ROOT, stdin=devnull,
                                stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://{host}:{port}"
    record = {"pid": proc.pid, "create_time": psutil.Process(proc.pid).create_time(),
              "url": url, "log": str(log), "dagster_home": str(home)}
    tmp = pid_file().with_suffix(f".tmp{os.getpid()}")
    tmp.write_text(json.dumps(record))
    os.replace(tmp, pid_file())
    print(f"h3 ui: Dagster instance {home}; {url}\n"
          f"h3 ui: detached, pid {proc.pid}; log {log}\n"
          f"h3 ui: stop it with `python -m h3.pipelines.ui --stop` (make ui-stop)", flush=True)
    return 0


def stop_detached() -> int:
    """Stops the server `--detach` started (the whole process group of the PID file's pid)."""
    record = running_detached()
    if record is None:
        print("h3 ui: no detached Dagster UI is running", file=sys.stderr, flush=True)
        return 0
    pid = int(record["pid"])
    print(f"h3 ui: stopping Dagster (pid {pid})", file=sys.stderr, flush=True)
    killed = stop_group(pid)
    if killed:
        print(f"h3 ui: killed {len(killed)} Dagster processes that did not stop in "
              f"{GRACE_S:.0f} s", file=sys.stderr, flush=True)
    pid_file().unlink(missing_ok=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    flags = {a for a in args if a.startswith("-")}
    unknown = flags - {"--detach", "--stop"}
    if unknown or len(args) - len(flags) > 1:
        print("usage: python -m h3.pipelines.ui [PORT] [--detach] | --stop", file=sys.stderr)
        return 2
    if "--stop" in flags:
        return stop_detached()
    host = default_host()
    rest = [a for a in args if a not in flags]
    port = rest[0] if rest else os.environ.get("H3_UI_PORT", "3000")
    if "--detach" in flags:
        return detach(host, port)
    home = ensure_dagster_home()
    print(f"h3 ui: Dagster instance {home}; http://{host}:{port}", file=sys.stderr, flush=True)
    stop = {"signal": None}

    def on_signal(signum, _frame) -> None:
        stop["signal"] = signum

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, on_signal)
    parent = os.getppid()
    proc = subprocess.Popen(dagster_dev_command(host, port), cwd=REPO_ROOT,
                            start_new_session=True)
    while proc.poll() is None and stop["signal"] is None and os.getppid() == parent:
        time.sleep(0.5)
    if proc.poll() is not None:
        return proc.returncode
    reason = (signal.Signals(stop["signal"]).name if stop["signal"] else "parent exited")
    print(f"h3 ui: stopping Dagster ({reason})", file=sys.stderr, flush=True)
    killed = stop_tree(proc)
    if killed:
        print(f"h3 ui: killed {len(killed)} Dagster processes that did not stop in "
              f"{GRACE_S:.0f} s", file=sys.stderr, flush=True)
    return 0


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        pass


def _process(pid: int) -> psutil.Process | None:
    try:
        return psutil.Process(pid)
    except psutil.NoSuchProcess:
        return None


def _running(p: psutil.Process) -> bool:
    try:
        return p.is_running() and p.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _send(p: psutil.Process, sig: int) -> None:
    try:
        p.send_signal(sig)
    except psutil.NoSuchProcess:
        pass


if __name__ == "__main__":
    sys.exit(main())
