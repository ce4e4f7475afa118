"""Running the real `h3` console script in subprocesses, each in its own process group (so a
test can kill -9 the whole group and never leaves a process behind)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

H3 = str(Path(sys.executable).with_name("h3"))


def h3_env(home: Path, **extra: str) -> dict[str, str]:
    env = {**os.environ, "H3_HOME": str(home), "HF_HUB_OFFLINE": "1",
           "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false", **extra}
    env.pop("DAGSTER_HOME", None)  # derived from H3_HOME by pipelines.instance
    return env


def start_h3(args: list[str], home: Path, **popen) -> subprocess.Popen:
    popen.setdefault("stdout", subprocess.PIPE)
    popen.setdefault("stderr", subprocess.PIPE)
    return subprocess.Popen([H3, *args], env=h3_env(home), start_new_session=True, text=True,
                            **popen)


def kill_group(proc: subprocess.Popen) -> None:
    """SIGKILL to the process's whole group (it and anything it started); waits for it."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait(timeout=30)
