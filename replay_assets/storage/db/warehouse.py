"""The warehouse file, the DuckDB adapter of both warehouse ports (``storage/ports.py``).

The writer (assets, sensors, ``run``, ``resolve``) takes an OS file lock with a bounded wait,
then fails with REPLAY_WAREHOUSE_BUSY; it migrates the schema and owns every transaction. The
reader (``status``, ``export``, ``recovery inspect|plan``) never takes that lock and never writes:
it opens the file read-only, so it sees exactly what is committed (a crashed writer's WAL is
replayed in memory, not into the file). DuckDB refuses a read-only open while another process
holds the file read-write and the other way round ("could not set lock"): both sides retry that
until their deadline, so a short read and a writer only ever wait for each other briefly.
"""

from __future__ import annotations

import fcntl
import os
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import duckdb
import polars as pl

from replay_assets.core.errors import ErrorCode, ReplayError
from replay_assets.storage.db import segments
from replay_assets.storage.db.migrations import MIGRATIONS
from replay_assets.storage.home.home_files import open_lock

POLL_SECONDS = 0.05
# how long a reader tries the warehouse before it answers from the published copy: longer than a
# sensor's or a journal step's short transaction, short enough that `status` answers promptly
# on a loaded 2-core machine while a load runs
FALLBACK_AFTER_SECONDS = 0.3
NOTHING_PUBLISHED = "empty state (the first load is running: nothing is published yet)"
# DuckDB buffer memory per connection, beyond which it spills to <warehouse>.tmp/: a share of
# the machine's memory (the ``duckdb_memory_percent`` setting), the rest left to the Python side,
# Dagster and the OS.
DEFAULT_MEMORY_PERCENT = 40.0
CGROUP_LIMIT = Path("/sys/fs/cgroup/memory.max")  # a container's bound (cgroup v2), "max" for none


def machine_memory_bytes() -> int:
    """The memory this process may use: the machine's, or its cgroup's limit when lower."""
    total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    try:
        bound = CGROUP_LIMIT.read_text().strip()
    except OSError:
        return total
    return min(total, int(bound)) if bound.isdigit() else total


def memory_limit(percent: float = DEFAULT_MEMORY_PERCENT) -> str:
    """DuckDB's ``memory_limit`` for ``percent`` of :func:`machine_memory_bytes`, in whole MiB."""
    return f"{max(int(machine_memory_bytes() * percent / 100) >> 20, 1)}MiB"


class _Held:
    """This process's writer connection to one warehouse file while a hold lasts; closed (lock
    and connection given up) while the hold is ``released``."""

    def __init__(self, warehouse: Warehouse, timeout: float | None) -> None:
        self.warehouse, self.timeout = warehouse, timeout
        self.con: duckdb.DuckDBPyConnection | None = None
        self._stack: ExitStack | None = None

    def open(self) -> None:
        stack = ExitStack()
        self.con = stack.enter_context(self.warehouse._open(self.timeout))
        self._stack = stack

    def close(self) -> None:
        stack, self._stack, self.con = self._stack, None, None
        if stack is not None:
            stack.close()


# (warehouse file, thread) -> the writer connection a hold keeps open (``Warehouse.hold``). Per
# thread: DuckDB connections are not shared across threads, and another thread of the process
# waits for the lock as any other connection would.
_HELD: dict[tuple[Path, int], _Held] = {}


def _key(path: Path) -> tuple[Path, int]:
    return path.resolve(), threading.get_ident()


def _held(path: Path) -> _Held | None:
    """This thread's hold on ``path``, unless it is released."""
    found = _HELD.get(_key(path))
    return found if found is not None and found.con is not None else None


class Warehouse:
    """The writer port on ``$HOME/warehouse.duckdb``. ``busy_timeout`` bounds the wait for the lock."""

    def __init__(self, home: Path, busy_timeout: float = 60.0, memory: str | None = None) -> None:
        self.home = Path(home)
        self.path = self.home / "warehouse.duckdb"
        self.lock_path = self.home / "warehouse.lock"
        self.busy_timeout = busy_timeout
        self.memory = memory or memory_limit()  # DuckDB's memory_limit (``memory_limit``)

    @contextmanager
    def hold(self, timeout: float | None = None) -> Iterator[None]:
        """Keep the writer lock and one open connection for the body: every ``connect`` and
        ``transaction`` of this thread inside it uses that connection, and readers of this
        process read through it. Opening the file, migrating and the checkpoint at close then
        happen once for the body instead of once per transaction (each costs tens of
        milliseconds; a run makes dozens). Transactions stay what they were, each its own
        commit; other processes wait for the lock (or read the published copy) until the body
        ends. Re-entrant: an inner hold is the outer one."""
        key = _key(self.path)
        if key in _HELD:
            yield
            return
        held = _Held(self, timeout)
        held.open()
        _HELD[key] = held
        try:
            yield
        finally:
            del _HELD[key]
            held.close()

    @contextmanager
    def released(self) -> Iterator[None]:
        """Give this thread's hold up for the body (connection closed, lock released) and take it
        again after. The operation journal's steps run so: each takes the lock for its own
        transaction, and between two steps an operator can inspect, hold or release the
        operation even while its process is stopped there (the journal's fence decides, not the lock)."""
        held = _held(self.path)
        if held is None:
            yield
            return
        held.close()
        try:
            yield
        finally:
            held.open()

    @contextmanager
    def connect(self, timeout: float | None = None) -> Iterator[duckdb.DuckDBPyConnection]:
        """A migrated connection under the writer lock; ``timeout=0`` never waits. Inside a
        ``hold`` of this thread, the held connection."""
        held = _held(self.path)
        if held is not None and held.con is not None:
            yield held.con
            return
        with self._open(timeout) as con:
            yield con

    @contextmanager
    def _open(self, timeout: float | None) -> Iterator[duckdb.DuckDBPyConnection]:
        self.home.mkdir(parents=True, exist_ok=True)
        fd = open_lock(self.home, self.lock_path.name)
        try:
            wait = self.busy_timeout if timeout is None else timeout
            deadline = time.monotonic() + wait
            self._acquire(fd, deadline, wait)
            con = _open_retrying(self.path, deadline, read_only=False, memory=self.memory)
            try:
                segments.bind(con, self.home, create=True)
                migrate(con)
                segments.sweep(con)  # what a landing rolled back, a relanding or retention left
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

    def _acquire(self, fd: int, deadline: float, wait: float) -> None:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise ReplayError(
                        ErrorCode.WAREHOUSE_BUSY,
                        f"another connection holds {self.lock_path.name} (waited {wait:g} s)",
                    ) from None
                time.sleep(POLL_SECONDS)


class WarehouseReader:
    """The reader port on ``$HOME/warehouse.duckdb``: read-only connections of the last committed
    state, without the writer lock. A home without a warehouse reads as an empty one (an
    in-memory database at the newest schema); a warehouse whose schema is older than this release
    is refused (REPLAY_WAREHOUSE_OUTDATED) rather than migrated, since a reader never writes.

    While a writer holds the file (DuckDB admits no reader then), ``fallback`` — the published
    copy, whose views mirror the evidence tables as of its last refresh — answers after
    ``FALLBACK_AFTER_SECONDS`` instead, or, before the first refresh wrote it, an empty state
    (nothing is certified yet); ``source`` says which one the last ``read`` used."""

    def __init__(
        self, home: Path, busy_timeout: float = 60.0, fallback: Path | None = None, memory: str | None = None
    ) -> None:
        self.path = Path(home) / "warehouse.duckdb"
        self.busy_timeout = busy_timeout
        self.fallback = fallback
        self.memory = memory or memory_limit()
        self.source = "warehouse"

    @contextmanager
    def read(self, timeout: float | None = None) -> Iterator[duckdb.DuckDBPyConnection]:
        """A read-only connection; ``timeout`` bounds the wait for a writer in another process."""
        wait = self.busy_timeout if timeout is None else timeout
        held = _held(self.path)
        if held is not None:  # this process writes: read what it committed, through its connection
            self.source = "warehouse"
        if held is not None and held.con is not None:
            con = held.con.cursor()  # a connection of its own: it names the home again
            segments.bind(con, self.path.parent, create=False)
        else:
            con = self._open(wait)
        try:
            found, newest = schema_version(con), MIGRATIONS[-1][0]
            if found < newest:
                raise ReplayError(
                    ErrorCode.WAREHOUSE_OUTDATED,
                    f"{self.path.name} has schema version {found}, this release reads {newest}; "
                    "any writing command (`replay-assets run`) migrates it",
                )
            yield con
        finally:
            con.close()

    def _open(self, wait: float) -> duckdb.DuckDBPyConnection:
        self.source = "warehouse"
        if not self.path.exists():
            con = duckdb.connect(":memory:")
            migrate(con)
            return con
        copy = self.fallback if self.fallback is not None and self.fallback.exists() else None
        first = min(wait, FALLBACK_AFTER_SECONDS) if self.fallback is not None else wait
        try:
            con = _open_retrying(self.path, time.monotonic() + first, read_only=True, memory=self.memory)
            segments.bind(con, self.path.parent, create=False)
            return con
        except ReplayError as busy:
            if self.fallback is None or busy.code is not ErrorCode.WAREHOUSE_BUSY:
                raise
        if copy is None:  # the first load of a home: nothing is certified, nothing published yet
            con = duckdb.connect(":memory:")
            migrate(con)
            self.source = NOTHING_PUBLISHED
            return con
        deadline = time.monotonic() + max(wait - first, POLL_SECONDS)
        con = _open_retrying(copy, deadline, read_only=True, memory=self.memory)
        if one(con, "SELECT 1 FROM information_schema.tables WHERE table_name = 'partition_status'") is None:
            con.close()  # a copy refreshed before it mirrored the evidence
            raise ReplayError(ErrorCode.WAREHOUSE_BUSY, f"{self.path.name} is open in another process")
        self.source = "published copy"
        return con


def _open_retrying(path: Path, deadline: float, *, read_only: bool, memory: str) -> duckdb.DuckDBPyConnection:
    """Open the file, retrying while another process holds a conflicting DuckDB lock."""
    while True:
        try:
            return duckdb.connect(str(path), read_only=read_only, config={"memory_limit": memory})
        except duckdb.IOException as exc:
            if "could not set lock" not in str(exc).lower():  # DuckDB's words for another process
                raise ReplayError(
                    ErrorCode.WAREHOUSE_UNREADABLE,
                    f"{path.name} cannot be opened as a DuckDB database (damaged or not a warehouse); "
                    "restore it from a backup",
                ) from exc
            if time.monotonic() >= deadline:
                raise ReplayError(
                    ErrorCode.WAREHOUSE_BUSY, f"{path.name} is open in another process"
                ) from exc
        time.sleep(POLL_SECONDS)


def schema_version(con: duckdb.DuckDBPyConnection) -> int:
    """The newest migration applied to the database behind ``con`` (0 for none). Asks the table
    itself: ``information_schema`` lists the whole catalog first, slow on a fresh connection
    to the warehouse, and every open asks this (docs/facts.md)."""
    try:
        row = one(con, "SELECT coalesce(max(version), 0) FROM schema_migrations")
    except duckdb.CatalogException:  # no migration ever ran on this database
        return 0
    return int(row[0]) if row else 0


def migrate(con: duckdb.DuckDBPyConnection) -> None:
    """Bring the schema to the newest version; each migration is one transaction."""
    if con.execute(f"SELECT getvariable('{segments.HOME_VARIABLE}')").fetchall()[0][0] is None:
        segments.bind(con, None, create=False)  # a warehouse without a home (in memory)
    con.execute(
        "CREATE TABLE IF NOT EXISTS schema_migrations "
        "(version INTEGER PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL)"
    )
    current = schema_version(con)
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


def insert_frame(con: duckdb.DuckDBPyConnection, table: str, frame: pl.DataFrame) -> None:
    """Insert a frame by column name (no values in SQL text; ``table`` is a constant name)."""
    con.register("_frame", frame)
    try:
        columns = ", ".join(frame.columns)
        con.execute(f"INSERT INTO {table} ({columns}) SELECT {columns} FROM _frame")
    finally:
        con.unregister("_frame")
