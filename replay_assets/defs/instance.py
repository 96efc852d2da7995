"""The embedded instance named in ``dagster.yaml`` (``instance_class``): Dagster's own, except that
its SQLite event log keeps one connection pool per database file instead of opening a new engine
for every event.

Dagster 1.13.27's ``SqliteEventLogStorage`` creates an engine, connects, writes and disposes it for
each event (and once more for each check evaluation, to ask whether the checks table exists), and
nearly all of that cost is opening the file and, on closing its last connection, checkpointing the
WAL into it. A run writes one to three transactions for each of its events (the
run's own file, and the index file for asset, check and run-status events), and a restate run over
many partitions writes hundreds. Reusing the connection removes most of that cost (the commit's
fsync stays: nothing is made less durable). A run's file is still checkpointed after each
transaction (a passive checkpoint), because the webserver watches each run's database file, not
its WAL, to stream the run's new events to the UI.

Dagster builds each SQLite URL by pasting the folder's path into it (``create_db_conn_string``), so
a ``?`` in the instance folder ended the path and ``run`` created a database outside the home.
Every SQLite URL of the instance comes from ``storage/home/paths.py`` instead (a home's path may
hold any character).

The PostgreSQL instance (``deploy/postgres/dagster.yaml``) names this class too: its ``storage:``
section replaces the SQLite default, and importing this module makes a plain ``postgresql://``
``DAGSTER_PG_URL`` (the form Dagster's docs use) mean dagster-postgres's driver, psycopg2, in
every process that loads the instance (CLI, webserver, daemon, run workers).
"""

from __future__ import annotations

import os
from collections import OrderedDict
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import dagster as dg
import yaml
from dagster._core.instance.ref import InstanceRef
from dagster._core.storage.event_log.sqlite import sqlite_event_log
from dagster._core.storage.event_log.sqlite.sqlite_event_log import (
    INDEX_SHARD_NAME,
    SqliteEventLogStorage,
)
from dagster._core.storage.runs.sqlite import sqlite_run_storage
from dagster._core.storage.runs.sqlite.sqlite_run_storage import SqliteRunStorage
from dagster._core.storage.schedules.sqlite import sqlite_schedule_storage
from dagster._core.storage.schedules.sqlite.sqlite_schedule_storage import SqliteScheduleStorage
from dagster._core.storage.sql import create_engine
from dagster._core.storage.sqlite_storage import (
    DagsterSqliteStorage,
    _event_logs_directory,
    _runs_directory,
    _schedule_directory,
)
from dagster._serdes import ConfigurableClassData
from sqlalchemy.dialects import registry
from sqlalchemy.engine import Connection, Engine

from replay_assets.storage.home.paths import sqlite_url

KEPT_FILES = 8  # engines kept open at once (the daemon and the webserver see every run's file)
BUSY_TIMEOUT_SECONDS = 30  # SQLITE_BUSY_TIMEOUT_SECONDS of Dagster's own storage
MODULE = __name__
# Dagster's SQLite storages look the URL builder up in their own modules when they open a
# database (``from_local``, ``conn_string_for_shard``): each gets the encoding one
for _module in (sqlite_run_storage, sqlite_schedule_storage, sqlite_event_log):
    _module.create_db_conn_string = sqlite_url  # type: ignore[attr-defined]
# SQLAlchemy 2.1 reads a URL without a driver, ``postgresql://``, as psycopg 3: not installed, and
# dagster-postgres fails with it anyway (its NOTIFY binds a parameter server-side). The dialect's
# bare name means psycopg2 instead, the driver dagster-postgres is built and tested on; a URL that
# names its driver (``postgresql+psycopg2://``) is read as before.
registry.register("postgresql", "sqlalchemy.dialects.postgresql.psycopg2", "dialect")


class PooledSqliteEventLogStorage(SqliteEventLogStorage):
    """``SqliteEventLogStorage`` with each database file's engine kept between transactions (the
    most recent ``KEPT_FILES``), and a process that forked forgetting its parent's connections."""

    def __init__(self, base_dir: str, inst_data: ConfigurableClassData | None = None) -> None:
        self._engines: OrderedDict[str, Engine] = OrderedDict()
        self._owner = os.getpid()
        self._has_check_table = False
        super().__init__(base_dir, inst_data)

    @property
    def supports_asset_checks(self) -> bool:
        """Dagster asks before storing each check evaluation, and answers by opening the index
        file with a new engine to look the table up. Once the table is there it stays (no
        migration drops it), so a yes is kept; a no is asked again (another process may migrate)."""
        if not self._has_check_table:
            self._has_check_table = bool(super().supports_asset_checks)
        return self._has_check_table

    @classmethod
    def from_config_value(
        cls, inst_data: ConfigurableClassData | None, config_value: Mapping[str, Any]
    ) -> PooledSqliteEventLogStorage:
        return cls(inst_data=inst_data, **config_value)

    @contextmanager
    def _connect(self, shard: str) -> Iterator[Connection]:
        with self._db_lock:
            engine = self._engine(shard)
            with engine.connect() as conn:
                with conn.begin():
                    yield conn
                if shard != INDEX_SHARD_NAME:  # the webserver's watch sees the run's file change
                    conn.exec_driver_sql("PRAGMA wal_checkpoint(PASSIVE)")

    def _engine(self, shard: str) -> Engine:
        if self._owner != os.getpid():  # a forked child never uses its parent's connections
            for engine in self._engines.values():
                engine.dispose(close=False)
            self._engines.clear()
            self._owner = os.getpid()
        kept = self._engines.get(shard)
        if kept is not None:
            self._engines.move_to_end(shard)
            return kept
        engine = create_engine(
            self.conn_string_for_shard(shard), connect_args={"timeout": BUSY_TIMEOUT_SECONDS}
        )
        if shard not in self._initialized_dbs:
            self._initdb(engine)
            self._initialized_dbs.add(shard)
        self._engines[shard] = engine
        while len(self._engines) > KEPT_FILES:
            _, oldest = self._engines.popitem(last=False)
            oldest.dispose()
        return engine

    def _close_all(self) -> None:
        with self._db_lock:
            for engine in self._engines.values():
                engine.dispose()
            self._engines.clear()

    def wipe(self) -> None:
        self._close_all()  # before its files are deleted
        super().wipe()

    def dispose(self) -> None:
        self._close_all()
        super().dispose()


class PooledSqliteStorage(DagsterSqliteStorage):
    """Dagster's SQLite storage (runs, schedules, event log under one folder) with the pooled
    event log."""

    def __init__(self, base_dir: str, inst_data: ConfigurableClassData | None = None) -> None:
        # DagsterSqliteStorage's own constructor, with the pooled event log in place of Dagster's
        self.base_dir = base_dir
        self._run_storage = SqliteRunStorage.from_local(_runs_directory(base_dir))
        self._event_log_storage = PooledSqliteEventLogStorage(_event_logs_directory(base_dir))
        self._schedule_storage = SqliteScheduleStorage.from_local(_schedule_directory(base_dir))
        self._inst_data = inst_data
        super(DagsterSqliteStorage, self).__init__()  # type: ignore[no-untyped-call]

    @classmethod
    def from_config_value(
        cls, inst_data: ConfigurableClassData, config_value: Mapping[str, Any]
    ) -> PooledSqliteStorage:
        return cls.from_local(inst_data=inst_data, **config_value)

    @property
    def event_storage_data(self) -> ConfigurableClassData | None:
        return ConfigurableClassData(
            MODULE,
            PooledSqliteEventLogStorage.__name__,
            yaml.dump({"base_dir": _event_logs_directory(self.base_dir)}, default_flow_style=False),
        )


class ReplayInstance(dg.DagsterInstance):
    """Dagster's instance; only the default storage differs (a ``storage:`` section in
    ``dagster.yaml``, such as PostgreSQL's, replaces it as usual)."""

    @classmethod
    def config_schema(cls) -> dict[str, Any]:
        return {}

    @staticmethod
    def config_defaults(base_dir: str) -> Mapping[str, ConfigurableClassData | None]:
        defaults = dict(InstanceRef.config_defaults(base_dir))
        defaults["storage"] = ConfigurableClassData(
            MODULE, PooledSqliteStorage.__name__, yaml.dump({"base_dir": base_dir}, default_flow_style=False)
        )
        defaults["event_log_storage"] = ConfigurableClassData(
            MODULE,
            PooledSqliteEventLogStorage.__name__,
            yaml.dump({"base_dir": _event_logs_directory(base_dir)}, default_flow_style=False),
        )
        return defaults
