"""Dagster's SQLite storage with one SQLAlchemy engine per event-log shard, not one per event.

Dagster's `SqliteEventLogStorage._connect` builds a new engine for every statement it runs (each
event, each dynamic-partition check, each input's data-version lookup), and `has_table` one for
every partition lookup: engine set-up plus a cold statement-compilation cache cost several ms of
CPU per call, ~20% of Dagster's CPU in an ingestion run (`h3 bench --scenario ingest`:
`dagster_overhead_cpu_s`, ~1 CPU-s less for a 6-document run, measured side by side). Here the engine of a shard is built
once and kept; it still uses NullPool, so every use opens and closes its own SQLite connection
exactly as before (other processes, e.g. `dagster dev`, see the same locking behaviour), and the
files and schema are Dagster's own. dagster.yaml selects it (`storage: custom:`).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from dagster._core.storage.base_storage import DagsterStorage
from dagster._core.storage.event_log.sqlite.sqlite_event_log import (
    INDEX_SHARD_NAME,
    SQLITE_BUSY_TIMEOUT_SECONDS,
    SqliteEventLogStorage,
)
from dagster._core.storage.runs import SqliteRunStorage
from dagster._core.storage.schedules import SqliteScheduleStorage
from dagster._core.storage.sqlite_storage import DagsterSqliteStorage
from dagster._serdes import ConfigurableClassData
from sqlalchemy import create_engine
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.pool import NullPool


class CachedEngineSqliteEventLogStorage(SqliteEventLogStorage):
    """SqliteEventLogStorage whose `_connect` reuses one engine per shard (run or index)."""

    def __init__(self, base_dir: str, inst_data: ConfigurableClassData | None = None) -> None:
        self._engines: dict[str, Engine] = {}
        self._engines_lock = threading.Lock()
        super().__init__(base_dir, inst_data=inst_data)

    def _engine(self, shard: str) -> Engine:
        with self._engines_lock:
            engine = self._engines.get(shard)
            if engine is None:
                engine = create_engine(self.conn_string_for_shard(shard), poolclass=NullPool,
                                       connect_args={"timeout": SQLITE_BUSY_TIMEOUT_SECONDS})
                self._engines[shard] = engine
            return engine

    @contextmanager
    def _connect(self, shard: str) -> Iterator[Connection]:
        # Same steps as Dagster's _connect (lock, init the shard once, one transaction), minus
        # building and disposing an engine each time.
        with self._db_lock:
            engine = self._engine(shard)
            if shard not in self._initialized_dbs:
                self._initdb(engine)
                self._initialized_dbs.add(shard)
            with engine.connect() as conn:
                with conn.begin():
                    yield conn

    def has_table(self, table_name: str) -> bool:
        # Asked before every dynamic-partition lookup; Dagster builds an engine for each ask.
        engine = self._engine(INDEX_SHARD_NAME)
        with engine.connect() as conn:
            return bool(engine.dialect.has_table(conn, table_name))

    def dispose(self) -> None:
        with self._engines_lock:
            for engine in self._engines.values():
                engine.dispose()
            self._engines.clear()
        super().dispose()


class H3SqliteStorage(DagsterSqliteStorage):
    """Dagster's default SQLite storage layout under `base_dir` (runs.db, history/runs/*.db,
    schedules/), with the cached-engine event log."""

    def __init__(self, base_dir: str, inst_data: ConfigurableClassData | None = None) -> None:
        self.base_dir = base_dir
        self._run_storage = SqliteRunStorage.from_local(os.path.join(base_dir, "history", ""))
        self._event_log_storage = CachedEngineSqliteEventLogStorage(
            os.path.join(base_dir, "history", "runs", ""))
        self._schedule_storage = SqliteScheduleStorage.from_local(
            os.path.join(base_dir, "schedules"))
        self._inst_data = inst_data
        DagsterStorage.__init__(self)

    @classmethod
    def from_config_value(cls, inst_data: ConfigurableClassData | None,
                          config_value: Any) -> H3SqliteStorage:
        return cls.from_local(inst_data=inst_data, **config_value)
