"""The warehouse file: one serialised connection at a time, migrations, transactions.

Every connection (assets, sensors, CLI) takes an OS file lock with a bounded wait, then fails
with REPLAY_WAREHOUSE_BUSY; the connection is always closed and the lock released, even when the
body raises. DuckDB itself refuses a second process while one holds the file read-write.
"""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import duckdb
import polars as pl

from replay_assets.core.errors import ErrorCode, ReplayError
from replay_assets.storage.db.migrations import MIGRATIONS

POLL_SECONDS = 0.05
# DuckDB buffer memory per connection; beyond it DuckDB spills to <warehouse>.tmp/. Bounds the
# peak RSS of a run at production volume (issue 6) with room for the Python side.
MEMORY_LIMIT = "1GB"


class Warehouse:
    """Port to ``$HOME/warehouse.duckdb``. ``busy_timeout`` bounds the wait for the lock."""

    def __init__(self, home: Path, busy_timeout: float = 60.0) -> None:
        self.home = Path(home)
        self.path = self.home / "warehouse.duckdb"
        self.lock_path = self.home / "warehouse.lock"
        self.busy_timeout = busy_timeout

    @contextmanager
    def connect(self, timeout: float | None = None) -> Iterator[duckdb.DuckDBPyConnection]:
        """A migrated connection under the writer lock; ``timeout=0`` never waits."""
        self.home.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            self._acquire(fd, self.busy_timeout if timeout is None else timeout)
            con = self._open()
            try:
                migrate(con)
                yield con
            finally:
                con.close()
        finally:
            os.close(fd)  # closing the descriptor releases the flock

    @contextmanager
    def transaction(self, timeout: float | None = None) -> Iterator[duckdb.DuckDBPyConnection]:
        """One atomic transaction: committed when the body returns, rolled back when it raises."""
        with self.connect(timeout) as con:
            con.begin()
            try:
                yield con
            except BaseException:
                con.rollback()
                raise
            con.commit()

    def _acquire(self, fd: int, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise ReplayError(
                        ErrorCode.WAREHOUSE_BUSY,
                        f"another connection holds {self.lock_path.name} (waited {timeout:g} s)",
                    ) from None
                time.sleep(POLL_SECONDS)

    def _open(self) -> duckdb.DuckDBPyConnection:
        try:
            return duckdb.connect(str(self.path), config={"memory_limit": MEMORY_LIMIT})
        except duckdb.IOException as exc:
            if "could not set lock" in str(exc).lower():  # DuckDB's words for another process
                raise ReplayError(
                    ErrorCode.WAREHOUSE_BUSY, f"{self.path.name} is open in another process"
                ) from exc
            raise ReplayError(
                ErrorCode.WAREHOUSE_UNREADABLE,
                f"{self.path.name} cannot be opened as a DuckDB database (damaged or not a warehouse); "
                "restore it from a backup",
            ) from exc


def migrate(con: duckdb.DuckDBPyConnection) -> None:
    """Bring the schema to the newest version; each migration is one transaction."""
    con.execute(
        "CREATE TABLE IF NOT EXISTS schema_migrations "
        "(version INTEGER PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL)"
    )
    row = one(con, "SELECT coalesce(max(version), 0) FROM schema_migrations")
    current = int(row[0]) if row else 0
    for version, statements in MIGRATIONS:
        if version <= current:
            continue
        con.begin()
        for statement in statements:
            con.execute(statement)
        con.execute("INSERT INTO schema_migrations (version, applied_at) VALUES (?, now())", [version])
        con.commit()


def query_frame(
    con: duckdb.DuckDBPyConnection, sql: str, params: list[object] | dict[str, object] | None = None
) -> pl.DataFrame:
    """Run a parameterised query and return a polars frame (zero-copy through Arrow)."""
    frame: pl.DataFrame = con.sql(sql, params=params or []).pl()
    return frame


def one(
    con: duckdb.DuckDBPyConnection, sql: str, params: list[object] | dict[str, object] | None = None
) -> tuple[Any, ...] | None:
    """The first row or None. Fetches the whole result: duckdb 2.0 refuses further work on a
    connection while an ``execute()`` result is only partly fetched."""
    rows = con.execute(sql, params or []).fetchall()
    return tuple(rows[0]) if rows else None
