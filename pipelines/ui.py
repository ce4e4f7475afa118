"""`make ui`: `dagster dev` on this H3_HOME's instance, stopped cleanly on SIGTERM, SIGINT or
SIGHUP, or when the process that started it (make, a shell) goes away.

Why a wrapper: `dagster dev` maps SIGTERM to its Ctrl-C path, which waits up to 60 s for each
service, and a SIGTERM sent to `make` never reaches it at all (make dies, dagster dev and its
webserver, daemon and code servers run on). Here Dagster runs in its own process group; a stop
asks it to shut down (SIGINT), waits GRACE_S, then ends whatever is left of the group and of its
descendants (SIGTERM, then SIGKILL), so no Dagster process outlives `make ui`.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil

from h3.pipelines.instance import REPO_ROOT, ensure_dagster_home

GRACE_S = 10.0  # Dagster's own shutdown; it usually takes 2-5 s
KILL_WAIT_S = 5.0


def dagster_dev_command(host: str, port: str) -> list[str]:
    dagster = Path(sys.executable).with_name("dagster")
    return [str(dagster), "dev", "-h", host, "-p", port, "-w", str(REPO_ROOT / "workspace.yaml")]


def stop_tree(proc: subprocess.Popen, grace_s: float = GRACE_S) -> list[int]:
    """Stops `proc` (the leader of its own process group) and all its descendants; returns the
    pids that had to be killed after the grace period."""
    try:
        family = psutil.Process(proc.pid).children(recursive=True)
    except psutil.NoSuchProcess:
        family = []
    _signal_group(proc.pid, signal.SIGINT)
    try:
        proc.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        pass
    alive = [p for p in [*family, _process(proc.pid)] if p is not None and _running(p)]
    for p in alive:
        _send(p, signal.SIGTERM)
    _, alive = psutil.wait_procs(alive, timeout=KILL_WAIT_S)
    for p in alive:
        _send(p, signal.SIGKILL)
    psutil.wait_procs(alive, timeout=KILL_WAIT_S)
    if proc.poll() is None:
        proc.wait(timeout=KILL_WAIT_S)
    return [p.pid for p in alive]


def default_host() -> str:
    """Localhost unless H3_UI_HOST says otherwise: the webserver has no authentication."""
    return os.environ.get("H3_UI_HOST", "127.0.0.1")


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    host = default_host()
    port = args[0] if args else os.environ.get("H3_UI_PORT", "3000")
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
