"""Dagster's own SQLite storage and compute logs, in the Dagster folder of this H3_HOME whoever
starts Dagster: `make ui` and the `h3` CLI (DAGSTER_HOME=$H3_HOME/dagster), or a plain
`dagster dev` typed in the repository root, which without DAGSTER_HOME runs on a temporary
instance configured by the root's dagster.yaml. dagster.yaml names these two classes, so that
instance still stores runs, events and logs with the CLI's, not in a temporary folder.

Both classes only choose the folder (the ConfigurableClass protocol: `config_type` and
`from_config_value`); files, schema and behaviour are Dagster's (an earlier subclass that
rewrote the event log's connection handling was dropped: see the README, "Operating H³").
With $H3_POSTGRES_URL set (many machines, `make postgres`), `H3HomeStorage` is
dagster-postgres's storage on that server instead (pipelines/instance.py writes that URL into the
instance's dagster.yaml for the CLI and `make ui`, so dask workers get it with the instance).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from dagster._core.storage.local_compute_log_manager import LocalComputeLogManager
from dagster._core.storage.sqlite_storage import DagsterSqliteStorage
from dagster._serdes import ConfigurableClassData

POSTGRES_URL_ENV = "H3_POSTGRES_URL"


def dagster_home() -> Path:
    """DAGSTER_HOME when set, else $H3_HOME/dagster (H3_HOME default: ./.h3). Without either,
    H3_HOME is set to the resolved folder, so the processes Dagster starts (webserver, daemon,
    code server, run workers) resolve the same store from any working directory."""
    if os.environ.get("DAGSTER_HOME"):
        return Path(os.environ["DAGSTER_HOME"])
    h3 = Path(os.environ.get("H3_HOME") or ".h3").expanduser().resolve()
    os.environ["H3_HOME"] = str(h3)
    return h3 / "dagster"


class H3HomeSqliteStorage(DagsterSqliteStorage):
    """Dagster's SQLite run, event-log and schedule storage under `dagster_home()`."""

    @classmethod
    def config_type(cls) -> dict:
        return {}

    @classmethod
    def from_config_value(cls, inst_data: ConfigurableClassData | None,
                          config_value: Any) -> DagsterSqliteStorage:
        return cls.from_local(str(dagster_home()), inst_data=inst_data)


class H3HomeStorage(H3HomeSqliteStorage):
    """The instance's storage: PostgreSQL at $H3_POSTGRES_URL when set, else Dagster's SQLite
    under `dagster_home()`. (A subclass of the SQLite one only because Dagster checks that the
    class dagster.yaml names is a storage class; `from_config_value` picks the real one.)"""

    @classmethod
    def config_type(cls) -> dict:
        return {}

    @classmethod
    def from_config_value(cls, inst_data: ConfigurableClassData | None, config_value: Any):
        url = os.environ.get(POSTGRES_URL_ENV)
        if url:
            from dagster_postgres import DagsterPostgresStorage

            return DagsterPostgresStorage(url, inst_data=inst_data)
        return H3HomeSqliteStorage.from_local(str(dagster_home()), inst_data=inst_data)


class H3HomeComputeLogManager(LocalComputeLogManager):
    """Dagster's local compute logs (each step's stdout/stderr) under `dagster_home()`/storage,
    where Dagster puts them for an instance in DAGSTER_HOME."""

    @classmethod
    def config_type(cls) -> dict:
        return {}

    @classmethod
    def from_config_value(cls, inst_data: ConfigurableClassData | None,
                          config_value: Any) -> LocalComputeLogManager:
        return cls(str(dagster_home() / "storage"), inst_data=inst_data)
