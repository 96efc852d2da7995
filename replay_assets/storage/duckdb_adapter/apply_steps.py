"""The DuckDB adapter's steps of applying a load date (``storage/apply/steps.py``): the storage
functions of ``storage/apply`` bound to one connection, one class per stage."""

from __future__ import annotations

import duckdb

from replay_assets.storage.apply import (
    latest,
    reading,
    recording,
    snapshot_scan,
    stage,
    state_digest,
    writes,
)
from replay_assets.storage.duckdb_adapter.binding import OnConnection, bound
from replay_assets.storage.publish import certify
from replay_assets.storage.publish import recording as publish_recording
from replay_assets.storage.rules import digest
from replay_assets.storage.rules.sql import on_sql


class DuckDBFoldSteps(OnConnection):
    applied_identity = on_sql(reading.applied_identity)
    newest_applied = on_sql(reading.newest_applied)
    record_applied = on_sql(recording.record_applied)
    stage_fold = bound(stage.stage_fold)
    drop_fold = bound(stage.drop_fold)
    batch_counts = on_sql(writes.batch_counts)
    violations = on_sql(writes.violations)
    record_blocked = on_sql(writes.record_blocked)
    same_history = on_sql(writes.same_history)
    undo_load_date = on_sql(writes.undo_load_date)


class DuckDBStateWrites(OnConnection):
    affected_groups = on_sql(writes.affected_groups)
    write_history = on_sql(writes.write_history)
    register_events = on_sql(writes.register_events)
    queue_groups = on_sql(writes.queue_groups)
    advance_watermarks = on_sql(writes.advance_watermarks)
    write_reconciliation = on_sql(recording.write_reconciliation)
    candidate_rows = on_sql(writes.candidate_rows)
    advance_latest = on_sql(latest.advance)
    latest_holds_before = on_sql(latest.holds_before)


class DuckDBGateSteps(OnConnection):
    previous_date = on_sql(reading.previous_date)
    digest_base = bound(state_digest.base)
    digest_change = bound(state_digest.change)
    controls_by_change = on_sql(digest.controls_by_change)
    check_written = bound(snapshot_scan.check_written)
    state_checks = on_sql(certify.state_checks)
    certify_state = on_sql(publish_recording.certify_state)
    write_snapshot = on_sql(recording.write_snapshot)
    store_digest = on_sql(recording.store_digest)


class DuckDBApplySteps(OnConnection):
    def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
        super().__init__(con)
        self.fold = DuckDBFoldSteps(con)
        self.writes = DuckDBStateWrites(con)
        self.gate = DuckDBGateSteps(con)
