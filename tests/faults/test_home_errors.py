"""An unwritable or full H3_HOME gives one clear line on stderr (naming H3_HOME and the reason)
and a non-zero exit, never a traceback."""

from __future__ import annotations

import resource
import signal
import subprocess

from tests.conftest import SAMPLE_CORPUS
from tests.faults.helpers import H3, h3_env


def _run(args: list[str], env: dict, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([H3, *args], env=env, capture_output=True, text=True, timeout=300, **kw)


def _assert_clear_failure(proc: subprocess.CompletedProcess, home, reason: str) -> None:
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    last = proc.stderr.strip().splitlines()[-1]
    assert str(home) in last and reason in last, last


def test_unwritable_h3_home(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    home = blocker / "h3"  # cannot exist: its parent is a file (fails for root too, unlike chmod)
    for args in (["stats"], ["index-build", "--path", str(SAMPLE_CORPUS)]):
        _assert_clear_failure(_run(args, h3_env(home)), home, "is not writable: Not a directory")


def _no_writes() -> None:
    """In the child: any write of a byte fails (EFBIG) as on a disk with no space left."""
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))


def test_full_h3_home(tmp_path):
    """A real full filesystem when this machine lets us mount a tiny tmpfs, else a process that
    cannot write a single byte (RLIMIT_FSIZE=0): the same code path, other errno."""
    mount = tmp_path / "full"
    mount.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mount)],
                             capture_output=True).returncode == 0
    try:
        home = mount / "h3"
        if mounted:
            try:  # fill it up
                with open(mount / "filler", "wb") as f:
                    while True:
                        f.write(b"\0" * 4096)
                        f.flush()
            except OSError:
                pass
            proc = _run(["index-build", "--path", str(SAMPLE_CORPUS)], h3_env(home))
            _assert_clear_failure(proc, home, "No space left on device")
        else:
            proc = _run(["index-build", "--path", str(SAMPLE_CORPUS)], h3_env(home),
                        preexec_fn=_no_writes)
            _assert_clear_failure(proc, home, "File too large")
    finally:
        if mounted:
            subprocess.run(["umount", str(mount)], check=True)


def test_concurrent_commands_do_not_trip_the_writability_probe(h3_home):
    """Every command checks H3_HOME is writable; many at once must not see each other's probe
    (a shared probe file name made concurrent `h3 recall`s fail)."""
    from concurrent.futures import ThreadPoolExecutor

    from h3_runtime.home import h3_home as resolve_home

    def many(_: int) -> int:
        return sum(resolve_home() == h3_home for _ in range(200))

    with ThreadPoolExecutor(16) as pool:
        assert sum(pool.map(many, range(16))) == 16 * 200
    assert not list(h3_home.glob(".write-probe*"))
