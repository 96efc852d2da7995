"""The Spark Connect + Delta adapter of the ``Store`` port: units of work on the warehouse's
Delta tables (``schema.py``), each writer's unit one fenced transaction (``tables.py``).

- ``transaction()``: a writer over every warehouse table on the newest fence; its writes become
  visible together when the body returns (one fence), and never when it raises or the process
  dies (the next writer rolls them back). A unit that wrote nothing does not fence.
- ``connect()`` and ``read()``: a reader's unit pinned at the newest fence; it refuses writes.
  The use cases only read under ``connect()``; on this engine it needs no lock.

A unit is the helpers of ``unit.py`` (``UnitBase``) and one object per capability over them, in
one module per room (``journal.py``, ...); a reader's objects are the reading classes only, so
it has no write method to call (and the unit beneath refuses one too).
"""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext

from pyspark.errors.exceptions.connect import SparkConnectException
from pyspark.sql import SparkSession
from pyspark.sql.connect.session import SparkSession as ConnectSession

from replay_assets.storage import unit as ports
from replay_assets.storage.evidence.written_once import EvidenceReading, EvidenceWriting
from replay_assets.storage.home.clock import real_now
from replay_assets.storage.journal.written_once import JournalReading, JournalWriting
from replay_assets.storage.spark import schema
from replay_assets.storage.spark.apply import ApplyReading, ApplyWriting
from replay_assets.storage.spark.landing import LandingReading, LandingWriting
from replay_assets.storage.spark.published import PublishReading, PublishWriting
from replay_assets.storage.spark.reports import SparkReports
from replay_assets.storage.spark.retention import RetentionReading, RetentionWriting
from replay_assets.storage.spark.tables import DeltaTables, EngineLanding
from replay_assets.storage.spark.unit import SparkSql, UnitBase


class SparkReader:
    """A pinned read's capabilities (``storage.unit.WarehouseReader``)."""

    def __init__(self, ops: UnitBase) -> None:
        self.ops = ops
        self.journal = JournalReading(SparkSql(ops))
        self.landing = LandingReading(ops)
        self.apply = ApplyReading(ops)
        self.publish = PublishReading(ops)
        self.evidence = EvidenceReading(SparkSql(ops))
        self.retention = RetentionReading(ops)
        self.reports = SparkReports(ops)


class SparkWriter:
    """A fenced transaction's capabilities (``storage.unit.WarehouseWriter``)."""

    def __init__(self, ops: UnitBase) -> None:
        self.ops = ops
        self.journal = JournalWriting(SparkSql(ops))
        self.landing = LandingWriting(ops)
        self.apply = ApplyWriting(ops)
        self.publish = PublishWriting(ops)
        self.evidence = EvidenceWriting(SparkSql(ops))
        self.retention = RetentionWriting(ops)
        self.reports = SparkReports(ops)


# a unit begun after this long without one first asks whether its session is still the server's
IDLE_CHECK = dt.timedelta(seconds=30)


class SparkStore:
    """The warehouse at ``root`` through the session ``spark``. With ``renew`` (a factory of new
    sessions on the same server), a unit that begins after :data:`IDLE_CHECK` without one checks
    the session first and takes a new one when the server has dropped it: a server removes a
    session idle past its timeout (Sail's default is 15 minutes), and a long-lived process (a
    code server, a sensor's daemon) outlives it. Nothing is lost: a unit's temporary views are
    its own, and every table is read from its Delta log. ``landing``: where the engine's workers
    read the landing area, when not at its local path."""

    def __init__(
        self,
        spark: SparkSession,
        root: str,
        clock: Callable[[], dt.datetime] = real_now,
        renew: Callable[[], SparkSession] | None = None,
        landing: EngineLanding | None = None,
    ) -> None:
        self.tables = DeltaTables(spark, root, landing)
        self.clock = clock
        self.source = "warehouse"
        self._renew = renew
        self._last_unit = clock()

    @contextmanager
    def transaction(self, timeout: float | None = None) -> Iterator[ports.WarehouseWriter]:
        tables = self._live()
        writer = tables.begin(f"unit-{uuid.uuid4().hex}", tuple(sorted(schema.schemas())))
        assert writer is not None, "a fresh unit id has never fenced"
        unit = UnitBase(tables, writer.snapshot, writer)
        try:
            yield SparkWriter(unit)
            if writer.commits:
                writer.fence(self.clock())
        finally:
            unit.close()
            self._last_unit = self.clock()

    @contextmanager
    def read(self, timeout: float | None = None) -> Iterator[ports.WarehouseReader]:
        tables = self._live()
        unit = UnitBase(tables, tables.committed(), None)
        try:
            yield SparkReader(unit)
        finally:
            unit.close()
            self._last_unit = self.clock()

    def _live(self) -> DeltaTables:
        """The tables on a session the server still holds (see the class), made the thread's
        active session: pyspark types a Python datetime (a literal, a statement's argument) by
        asking the active session's settings, which would otherwise be the first session this
        thread created, maybe another store's, maybe one the server has dropped."""
        if self._renew is not None and self.clock() - self._last_unit >= IDLE_CHECK:
            if session_dropped(self.tables.spark):
                self.tables.spark.stop()  # best effort: the server has no such session
                self.tables = DeltaTables(self._renew(), self.tables.root, self.tables.landing)
        ConnectSession._active_session.session = self.tables.spark  # no public setter in pyspark 4
        return self.tables

    def connect(self, timeout: float | None = None) -> AbstractContextManager[ports.WarehouseReader]:
        return self.read(timeout)

    def hold(self, timeout: float | None = None) -> AbstractContextManager[None]:
        return nullcontext()  # a unit opens nothing that a hold could keep

    def released(self) -> AbstractContextManager[None]:
        return nullcontext()


# how a server says a session is gone: Sail's words, and Spark Connect's error classes
_DROPPED = ("is not running", "INVALID_HANDLE.SESSION_CLOSED", "INVALID_HANDLE.SESSION_NOT_FOUND")


def session_dropped(spark: SparkSession) -> bool:
    """Whether the server no longer holds ``spark``'s session (one round trip)."""
    if spark.client.is_closed:
        return True
    try:
        spark.version  # noqa: B018 (asks the server: a property with a round trip)
    except SparkConnectException as e:
        if any(word in str(e) for word in _DROPPED):
            return True
        raise
    return False
