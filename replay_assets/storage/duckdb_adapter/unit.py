"""The DuckDB adapter of the ``Store`` port and its units of work: each unit is one connection
(a transaction, a writer's autocommit connection or a read-only snapshot) whose capabilities
bind the storage modules, which keep the SQL. Nothing here decides anything; it only binds, and
mypy checks each binding against its port's signature (``storage/unit.py``). A reader's unit is
built from the reading classes only, so it has no write method to call."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from functools import partial
from pathlib import Path

import duckdb

from replay_assets.core.plan import DatePlan
from replay_assets.storage.apply import state_digest
from replay_assets.storage.apply.certified import recomputed_controls
from replay_assets.storage.apply.load_date import ApplyResult, apply_load_date
from replay_assets.storage.capabilities import shared
from replay_assets.storage.db import segments
from replay_assets.storage.db.connection_ports import DuckDBReading, DuckDBWriting
from replay_assets.storage.db.sql import DuckDBSql
from replay_assets.storage.duckdb_adapter.apply_steps import DuckDBApplySteps
from replay_assets.storage.duckdb_adapter.binding import OnConnection, bound
from replay_assets.storage.duckdb_adapter.publish_steps import DuckDBPublishSteps
from replay_assets.storage.evidence import batches
from replay_assets.storage.evidence.written_once import EvidenceReading, EvidenceWriting
from replay_assets.storage.journal.written_once import JournalReading, JournalWriting
from replay_assets.storage.landing import counts, ingest
from replay_assets.storage.publish import exports, procedure, published_copy, reverify
from replay_assets.storage.retention import prune
from replay_assets.storage.unit import WarehouseReader, WarehouseWriter


class DuckDBStore:
    """Units over the DuckDB warehouse's writer and reader connections."""

    def __init__(self, writer: DuckDBWriting, reader: DuckDBReading) -> None:
        self.writer = writer
        self.reader = reader

    @property
    def source(self) -> str:
        return self.reader.source

    @contextmanager
    def connect(self, timeout: float | None = None) -> Iterator[WarehouseReader]:
        with self.writer.connect(timeout) as con:
            yield DuckDBReader(con)

    @contextmanager
    def transaction(self, timeout: float | None = None) -> Iterator[WarehouseWriter]:
        with self.writer.transaction(timeout) as con:
            yield DuckDBWriter(con)

    @contextmanager
    def read(self, timeout: float | None = None) -> Iterator[WarehouseReader]:
        with self.reader.read(timeout) as con:
            yield DuckDBReader(con)

    def hold(self, timeout: float | None = None) -> AbstractContextManager[None]:
        return self.writer.hold(timeout)

    def released(self) -> AbstractContextManager[None]:
        return self.writer.released()


class LandingReading(OnConnection, shared.LandingReads):
    check_segments = bound(segments.check)
    landed_counts = bound(counts.landed_counts)


class LandingWriting(LandingReading, shared.LandingRecords):
    land_batch = bound(ingest.land_batch)
    record_relanding = bound(batches.record_relanding)


class ApplyReading(OnConnection, shared.ApplyReads):
    pass


class ApplyWriting(ApplyReading, shared.ApplyRecords):
    def apply_load_date(
        self,
        plan: DatePlan,
        *,
        first_date: str,
        run_id: str | None,
        now: dt.datetime,
        sealed_ok: bool = False,
        restate: bool = False,
    ) -> ApplyResult:
        steps = DuckDBApplySteps(self.con)
        return apply_load_date(
            steps, plan, first_date=first_date, run_id=run_id, now=now, sealed_ok=sealed_ok, restate=restate
        )


class PublishReading(OnConnection, shared.PublishReads):
    pass


class PublishWriting(PublishReading):
    record_failed_candidate = shared.PublicationWrites.record_failed_candidate

    def refresh_published_copy(self, home: Path) -> list[str]:
        """Refused (REPLAY_COMMIT_UNKNOWN) while an operator holds an operation."""
        JournalReading(self.sql).require_no_hold()
        return published_copy.refresh(self.con, home)

    def publish_aggregates(
        self, home: Path, *, dates: list[str], run_id: str | None, now: dt.datetime
    ) -> list[procedure.Published]:
        steps = DuckDBPublishSteps(self.con)
        return procedure.publish_aggregates(steps, home, dates=dates, run_id=run_id, now=now)


class RetentionReading(OnConnection, shared.RetentionReads):
    pass


class RetentionWriting(RetentionReading):
    prune_load_date = bound(prune.prune_load_date)


class DuckDBReports(OnConnection, shared.ReportReads):
    daily_totals = bound(exports.daily_totals)
    export_table = bound(exports.table)

    def reverify_state(self) -> procedure.Verdict:
        return reverify.reverify_state(
            self.sql,
            recomputed=partial(state_digest.recomputed_digest, self.con),
            controls=partial(recomputed_controls, self.con),
        )


class DuckDBReader:
    """One DuckDB connection's reads (``storage.unit.WarehouseReader``)."""

    def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
        self.con = con
        self.journal = JournalReading(DuckDBSql(con))
        self.landing = LandingReading(con)
        self.apply = ApplyReading(con)
        self.publish = PublishReading(con)
        self.evidence = EvidenceReading(DuckDBSql(con))
        self.retention = RetentionReading(con)
        self.reports = DuckDBReports(con)


class DuckDBWriter:
    """One DuckDB connection's reads and writes (``storage.unit.WarehouseWriter``)."""

    def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
        self.con = con
        self.journal = JournalWriting(DuckDBSql(con))
        self.landing = LandingWriting(con)
        self.apply = ApplyWriting(con)
        self.publish = PublishWriting(con)
        self.evidence = EvidenceWriting(DuckDBSql(con))
        self.retention = RetentionWriting(con)
        self.reports = DuckDBReports(con)
