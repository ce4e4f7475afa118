"""A private PostgreSQL server for the Dagster instance (`make postgres`, the test fixture).

PostgreSQL refuses to run as root, so when we are root the server runs as the unprivileged
`postgres` user (apt's `postgresql` package creates it); otherwise as ourselves. It listens on
127.0.0.1 only, on a free port, with trust authentication: for one machine or a test. Across
machines, point H3_POSTGRES_URL at a managed or properly configured server instead.

    python -m h3.pipelines.postgres start DIR   # prints the URL to export as H3_POSTGRES_URL
    python -m h3.pipelines.postgres stop DIR
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

SERVICE_USER = "postgres"
DATABASE = "postgres"


class PostgresError(RuntimeError):
    """The server could not be set up or started; the message says which step and why."""


def pg_binary(name: str) -> str:
    """initdb / pg_ctl: on PATH, else Debian's /usr/lib/postgresql/<version>/bin."""
    found = shutil.which(name) or next(iter(sorted(
        glob.glob(f"/usr/lib/postgresql/*/bin/{name}"), reverse=True)), None)
    if not found:
        raise PostgresError(f"{name} not found: install PostgreSQL (apt-get install postgresql)")
    return found


def _as_service_user(cmd: list[str]) -> list[str]:
    if os.geteuid() != 0:
        return cmd
    return ["runuser", "-u", SERVICE_USER, "--", *cmd]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run(cmd: list[str], step: str) -> None:
    done = subprocess.run(_as_service_user(cmd), capture_output=True, text=True)
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
        raise PostgresError(f"postgres {step} failed: {tail[0]}")


def start(folder: Path, port: int | None = None) -> str:
    """Creates (first time) and starts a server whose files live in `folder`; returns its URL.
    The folder must be reachable by the service user (not under a root-only 0700 parent)."""
    folder = Path(folder).resolve()
    data = folder / "data"
    folder.mkdir(parents=True, exist_ok=True)
    if os.geteuid() == 0:
        shutil.chown(folder, SERVICE_USER, SERVICE_USER)
    if not (data / "PG_VERSION").exists():
        _run([pg_binary("initdb"), "-D", str(data), "-U", "postgres", "-A", "trust",
              "--no-sync", "-E", "UTF8"], "initdb")
    port = port or _free_port()
    # TCP on loopback only; no Unix socket (its default folder needs root to create)
    options = f"-p {port} -c listen_addresses=127.0.0.1 -c unix_socket_directories=''"
    _run([pg_binary("pg_ctl"), "-D", str(data), "-l", str(folder / "server.log"), "-o", options,
          "-w", "-t", "60", "start"], "start")
    # psycopg2 named: SQLAlchemy 2.1 takes a bare postgresql:// to mean psycopg 3
    url = f"postgresql+psycopg2://postgres@127.0.0.1:{port}/{DATABASE}"
    (folder / "url").write_text(url + "\n")
    return url


def stop(folder: Path) -> None:
    data = Path(folder).resolve() / "data"
    if (data / "postmaster.pid").exists():
        _run([pg_binary("pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop"], "stop")


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[0] not in ("start", "stop"):
        print(__doc__.strip().splitlines()[-2].strip(), file=sys.stderr)
        return 2
    try:
        if argv[0] == "start":
            print(start(Path(argv[1])))
        else:
            stop(Path(argv[1]))
    except PostgresError as exc:
        print(f"h3 postgres: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
