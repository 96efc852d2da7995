"""The DuckDB adapter of the ``Store`` port and its units of work: each unit is one connection
(a transaction, a writer's autocommit connection or a read-only snapshot) bound to the storage
modules, which keep the SQL. Nothing here decides anything; it only binds, and mypy checks each
binding against the port's signature (``storage/unit.py``)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

import duckdb

from replay_assets.core.plan import DatePlan
from replay_assets.storage import ports
from replay_assets.storage.apply import facts, writes
from replay_assets.storage.apply.load_date import ApplyResult, apply_load_date
from replay_assets.storage.db.apply_steps import DuckDBApplySteps
from replay_assets.storage.db.binding import bound
from replay_assets.storage.db.publish_steps import DuckDBPublishSteps
from replay_assets.storage.evidence import attempts, batches, costs, notes
from replay_assets.storage.evidence import status as partition_status
from replay_assets.storage.journal import entries, identities
from replay_assets.storage.landing import counts, ingest, segments
from replay_assets.storage.publish import aggregates, certify, exports, published_copy, reverify
from replay_assets.storage.retention import prune
from replay_assets.storage.unit import Unit


class DuckDBStore:
    """Units over the DuckDB warehouse's writer and reader ports."""

    def __init__(self, writer: ports.WarehouseWriter, reader: ports.WarehouseReader) -> None:
        self.writer = writer
        self.reader = reader

    @property
    def source(self) -> str:
        return self.reader.source

    @contextmanager
    def connect(self, timeout: float | None = None) -> Iterator[Unit]:
        with self.writer.connect(timeout) as con:
            yield DuckDBUnit(con)

    @contextmanager
    def transaction(self, timeout: float | None = None) -> Iterator[Unit]:
        with self.writer.transaction(timeout) as con:
            yield DuckDBUnit(con)

    @contextmanager
    def read(self, timeout: float | None = None) -> Iterator[Unit]:
        with self.reader.read(timeout) as con:
            yield DuckDBUnit(con)

    def hold(self, timeout: float | None = None) -> AbstractContextManager[None]:
        return self.writer.hold(timeout)

    def released(self) -> AbstractContextManager[None]:
        return self.writer.released()


class DuckDBUnit:
    """One DuckDB connection in the use cases' terms (``storage.unit.Unit``)."""

    def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
        self.con = con

    # journal
    journal_entry = bound(entries.get)
    reload_entry = bound(entries.reload)
    create_or_get_entry = bound(entries.create_or_get)
    cas_entry = bound(entries.cas)
    require_no_hold = bound(entries.require_no_hold)
    fence_committed = bound(entries.fence_committed)
    write_fence = bound(entries.write_fence)
    committed_in_doubt = bound(entries.committed_in_doubt)
    unfinished_operations = bound(entries.unfinished)
    operation_audit = bound(entries.audit_trail)
    apply_operation = bound(identities.apply_operation)
    publish_operation = bound(identities.publish_operation)
    prune_operation = bound(identities.prune_operation)
    publications_digest = bound(identities.publications_digest)
    # landing
    land_batch = bound(ingest.land_batch)
    landed_counts = bound(counts.landed_counts)
    # applying
    warehouse_facts = bound(facts.warehouse_facts)
    record_attempt = bound(facts.record_attempt)
    require_landed = bound(facts.require_landed)

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

    undo_load_date = bound(writes.undo_load_date)
    # certifying and publishing
    certified_pointer = bound(certify.pointer)
    target_digest = bound(certify.target_digest)
    certify_state = bound(certify.certify_state)
    write_snapshot = bound(certify.write_snapshot)
    record_failed_candidate = bound(certify.record_failed_candidate)
    published_partitions = bound(certify.published_partitions)
    newest_versions = bound(certify.newest_versions)

    def publish_aggregates(
        self, home: Path, *, dates: list[str], run_id: str | None, now: dt.datetime
    ) -> list[aggregates.Published]:
        steps = DuckDBPublishSteps(self.con)
        return aggregates.publish_aggregates(steps, home, dates=dates, run_id=run_id, now=now)

    pending_groups = bound(aggregates.pending_groups)
    refresh_published_copy = bound(published_copy.refresh)
    reverify_state = bound(reverify.reverify_state)
    reverify_aggregates = bound(reverify.reverify_aggregates)
    daily_totals = bound(exports.daily_totals)
    export_table = bound(exports.table)
    reconciliation_report = bound(exports.reconciliation_report)
    check_segments = bound(segments.check)
    status_report = bound(exports.status_report)
    # evidence
    record_cost = bound(costs.record_cost)
    run_costs = bound(costs.run_costs)
    insert_attempt = bound(attempts.insert_attempt)
    record_step_attempt = bound(attempts.record_step_attempt)
    step_attempts = bound(attempts.step_attempts)
    slo_for = bound(attempts.slo_for)
    daily_slos = bound(attempts.daily_slos)
    set_status = bound(partition_status.set_status)
    landed_batch = bound(batches.landed)
    schema_gated = bound(batches.schema_gated)
    violated_on = bound(batches.violated_on)
    record_relanding = bound(batches.record_relanding)
    record_skip = bound(batches.record_skip)
    sensor_cursor = bound(notes.sensor_cursor)
    save_sensor_cursor = bound(notes.save_sensor_cursor)
    record_backfill = bound(notes.record_backfill)
    # retention
    pruned_through = bound(prune.pruned_through)
    applied_dates = bound(prune.applied_dates)
    prune_load_date = bound(prune.prune_load_date)
    pruned_digest = bound(prune.pruned_digest)
