"""The DuckDB adapter of the ``Store`` port and its units of work: each unit is one connection
(a transaction, a writer's autocommit connection or a read-only snapshot) bound to the storage
modules, which keep the SQL. Nothing here decides anything; it only binds, and mypy checks each
binding against the port's signature (``storage/unit.py``)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Concatenate, ParamSpec, TypeVar

import duckdb

from replay_assets.storage import ports
from replay_assets.storage.apply import facts, writes
from replay_assets.storage.apply.load_date import apply_load_date
from replay_assets.storage.evidence import attempts, batches, costs, notes
from replay_assets.storage.evidence import status as partition_status
from replay_assets.storage.journal import entries, identities
from replay_assets.storage.landing import ingest
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

    def released(self) -> AbstractContextManager[None]:
        return self.writer.released()


P = ParamSpec("P")
R = TypeVar("R")


def _bound(
    operation: Callable[Concatenate[duckdb.DuckDBPyConnection, P], R],
) -> Callable[Concatenate[DuckDBUnit, P], R]:
    """A storage function over a connection, as a method of the unit holding that connection."""

    def method(unit: DuckDBUnit, /, *args: P.args, **kwargs: P.kwargs) -> R:
        return operation(unit.con, *args, **kwargs)

    return method


class DuckDBUnit:
    """One DuckDB connection in the use cases' terms (``storage.unit.Unit``)."""

    def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
        self.con = con

    # journal
    journal_entry = _bound(entries.get)
    reload_entry = _bound(entries.reload)
    create_or_get_entry = _bound(entries.create_or_get)
    cas_entry = _bound(entries.cas)
    require_no_hold = _bound(entries.require_no_hold)
    fence_committed = _bound(entries.fence_committed)
    write_fence = _bound(entries.write_fence)
    committed_in_doubt = _bound(entries.committed_in_doubt)
    apply_operation = _bound(identities.apply_operation)
    publish_operation = _bound(identities.publish_operation)
    prune_operation = _bound(identities.prune_operation)
    publications_digest = _bound(identities.publications_digest)
    # landing
    land_batch = _bound(ingest.land_batch)
    # applying
    warehouse_facts = _bound(facts.warehouse_facts)
    record_attempt = _bound(facts.record_attempt)
    require_landed = _bound(facts.require_landed)
    apply_load_date = _bound(apply_load_date)
    undo_load_date = _bound(writes.undo_load_date)
    # certifying and publishing
    certified_pointer = _bound(certify.pointer)
    target_digest = _bound(certify.target_digest)
    certify_state = _bound(certify.certify_state)
    write_snapshot = _bound(certify.write_snapshot)
    record_failed_candidate = _bound(certify.record_failed_candidate)
    published_partitions = _bound(certify.published_partitions)
    newest_versions = _bound(certify.newest_versions)
    publish_aggregates = _bound(aggregates.publish_aggregates)
    pending_groups = _bound(aggregates.pending_groups)
    refresh_published_copy = _bound(published_copy.refresh)
    reverify_state = _bound(reverify.reverify_state)
    reverify_aggregates = _bound(reverify.reverify_aggregates)
    daily_totals = _bound(exports.daily_totals)
    reconciliation_report = _bound(exports.reconciliation_report)
    status_report = _bound(exports.status_report)
    # evidence
    record_cost = _bound(costs.record_cost)
    run_costs = _bound(costs.run_costs)
    insert_attempt = _bound(attempts.insert_attempt)
    record_step_attempt = _bound(attempts.record_step_attempt)
    step_attempts = _bound(attempts.step_attempts)
    slo_for = _bound(attempts.slo_for)
    daily_slos = _bound(attempts.daily_slos)
    set_status = _bound(partition_status.set_status)
    landed_batch = _bound(batches.landed)
    schema_gated = _bound(batches.schema_gated)
    violated_on = _bound(batches.violated_on)
    record_relanding = _bound(batches.record_relanding)
    record_skip = _bound(batches.record_skip)
    sensor_cursor = _bound(notes.sensor_cursor)
    save_sensor_cursor = _bound(notes.save_sensor_cursor)
    record_backfill = _bound(notes.record_backfill)
    # retention
    pruned_through = _bound(prune.pruned_through)
    applied_dates = _bound(prune.applied_dates)
    prune_load_date = _bound(prune.prune_load_date)
    pruned_digest = _bound(prune.pruned_digest)
