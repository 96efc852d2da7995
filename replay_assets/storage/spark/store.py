"""The Spark Connect + Delta adapter of the ``Store`` port: units of work on the warehouse's
Delta tables (``schema.py``), each writer's unit one fenced transaction (``tables.py``).

- ``transaction()``: a writer over every warehouse table on the newest fence; its writes become
  visible together when the body returns (one fence), and never when it raises or the process
  dies (the next writer rolls them back). A unit that wrote nothing does not fence.
- ``connect()`` and ``read()``: a reader's unit pinned at the newest fence; it refuses writes.
  The use cases only read under ``connect()``; on this engine it needs no lock.

The unit's operations live in one module per room (``journal.py``, ...), each a mixin of
``SparkUnit`` over the helpers of ``unit.py``.
"""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext

from pyspark.sql import SparkSession

from replay_assets.storage import unit as ports
from replay_assets.storage.home.clock import real_now
from replay_assets.storage.spark import schema
from replay_assets.storage.spark.landing import LandingOps
from replay_assets.storage.spark.published import PublishedOps
from replay_assets.storage.spark.retention import RetentionOps
from replay_assets.storage.spark.tables import DeltaTables


class SparkUnit(PublishedOps, RetentionOps, LandingOps):
    """One fenced transaction or one pinned read of the Delta warehouse."""


class SparkReader:
    """A pinned read's capabilities (``storage.unit.WarehouseReader``): each typed as its read
    port, so a caller cannot name a write; the unit beneath refuses one too."""

    def __init__(self, ops: SparkUnit) -> None:
        self.ops = ops
        self.journal: ports.JournalReader = ops
        self.landing: ports.LandingReader = ops
        self.apply: ports.ApplyReader = ops
        self.publish: ports.PublishReader = ops
        self.evidence: ports.EvidenceReader = ops
        self.retention: ports.RetentionReader = ops
        self.reports: ports.Reports = ops


class SparkWriter:
    """A fenced transaction's capabilities (``storage.unit.WarehouseWriter``)."""

    def __init__(self, ops: SparkUnit) -> None:
        self.ops = ops
        self.journal: ports.JournalWriter = ops
        self.landing: ports.LandingWriter = ops
        self.apply: ports.ApplyWriter = ops
        self.publish: ports.PublishWriter = ops
        self.evidence: ports.EvidenceWriter = ops
        self.retention: ports.RetentionWriter = ops
        self.reports: ports.Reports = ops


class SparkStore:
    def __init__(self, spark: SparkSession, root: str, clock: Callable[[], dt.datetime] = real_now) -> None:
        self.tables = DeltaTables(spark, root)
        self.clock = clock
        self.source = "warehouse"

    @contextmanager
    def transaction(self, timeout: float | None = None) -> Iterator[ports.WarehouseWriter]:
        writer = self.tables.begin(f"unit-{uuid.uuid4().hex}", tuple(sorted(schema.schemas())))
        assert writer is not None, "a fresh unit id has never fenced"
        unit = SparkUnit(self.tables, writer.snapshot, writer)
        try:
            yield SparkWriter(unit)
            if writer.commits:
                writer.fence(self.clock())
        finally:
            unit.close()

    @contextmanager
    def read(self, timeout: float | None = None) -> Iterator[ports.WarehouseReader]:
        unit = SparkUnit(self.tables, self.tables.committed(), None)
        try:
            yield SparkReader(unit)
        finally:
            unit.close()

    def connect(self, timeout: float | None = None) -> AbstractContextManager[ports.WarehouseReader]:
        return self.read(timeout)

    def hold(self, timeout: float | None = None) -> AbstractContextManager[None]:
        return nullcontext()  # a unit opens nothing that a hold could keep

    def released(self) -> AbstractContextManager[None]:
        return nullcontext()
