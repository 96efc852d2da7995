"""Each capability's operations that are written once (``on_sql``), grouped as the ports group
them; an adapter's class inherits the group and adds what its engine does its own way. A group
with nothing engine-specific is used as it is, over the engine's ``Sql``."""

from __future__ import annotations

from replay_assets.storage.apply import latest, reading, recording, writes
from replay_assets.storage.evidence import written_once
from replay_assets.storage.journal import identities
from replay_assets.storage.landing import reading as landing_reading
from replay_assets.storage.publish import aggregates, certify, reports, reverify
from replay_assets.storage.publish import recording as publish_recording
from replay_assets.storage.retention import reading as retention_reading
from replay_assets.storage.rules import digest
from replay_assets.storage.rules.sql import Sql, on_sql


class OverSql:
    """What holds the ``Sql`` the operations run on."""

    def __init__(self, sql: Sql) -> None:
        self.sql = sql


class LandingReads(OverSql):
    landed_batch = on_sql(landing_reading.landed_batch)
    schema_gated = on_sql(landing_reading.schema_gated)
    violated_on = on_sql(landing_reading.violated_on)


class ApplyReads(OverSql):
    warehouse_facts = on_sql(reading.warehouse_facts)
    require_landed = on_sql(reading.require_landed)
    apply_operation = on_sql(identities.apply_operation)
    target_digest = on_sql(reading.target_digest)


class ApplyRecords(ApplyReads):
    record_attempt = on_sql(recording.record_attempt)
    undo_load_date = on_sql(writes.undo_load_date)
    certify_state = on_sql(publish_recording.certify_state)
    write_snapshot = on_sql(recording.write_snapshot)


class PublishReads(OverSql):
    certified_pointer = on_sql(reading.certified_pointer)
    published_partitions = on_sql(reading.published_partitions)
    newest_versions = on_sql(reading.newest_versions)
    pending_groups = on_sql(publish_recording.pending_groups)
    publish_operation = on_sql(identities.publish_operation)
    publications_digest = on_sql(identities.publications_digest)


class RetentionReads(OverSql):
    pruned_through = on_sql(reading.pruned_through)
    applied_dates = on_sql(reading.applied_dates)
    pruned_digest = on_sql(retention_reading.pruned_digest)
    prune_operation = on_sql(identities.prune_operation)


class ReportReads(OverSql):
    status_report = on_sql(reports.status_report)
    reconciliation_report = on_sql(reports.reconciliation_report)
    reverify_aggregates = on_sql(reverify.reverify_aggregates)


class FoldRecords(OverSql):
    """The fold's steps but its staging (``storage/apply/steps.py``)."""

    applied_identity = on_sql(reading.applied_identity)
    newest_applied = on_sql(reading.newest_applied)
    record_applied = on_sql(recording.record_applied)
    batch_counts = on_sql(writes.batch_counts)
    violations = on_sql(writes.violations)
    record_blocked = on_sql(writes.record_blocked)
    same_history = on_sql(writes.same_history)
    undo_load_date = on_sql(writes.undo_load_date)


class StateWrites(OverSql):
    """Every write after the fold (``storage/apply/steps.py``)."""

    affected_groups = on_sql(writes.affected_groups)
    write_history = on_sql(writes.write_history)
    register_events = on_sql(writes.register_events)
    queue_groups = on_sql(writes.queue_groups)
    advance_watermarks = on_sql(writes.advance_watermarks)
    write_reconciliation = on_sql(recording.write_reconciliation)
    candidate_rows = on_sql(writes.candidate_rows)
    advance_latest = on_sql(latest.advance)
    latest_holds_before = on_sql(latest.holds_before)


class GateRecords(OverSql):
    """The gate's steps but the row hashing and row checks (``storage/apply/steps.py``)."""

    previous_date = on_sql(reading.previous_date)
    controls_by_change = on_sql(digest.controls_by_change)
    state_checks = on_sql(certify.state_checks)
    certify_state = on_sql(publish_recording.certify_state)
    write_snapshot = on_sql(recording.write_snapshot)
    store_digest = on_sql(recording.store_digest)


class CandidateReads(OverSql):
    """The publish procedure's reads but the recomputation (``storage/publish/steps.py``)."""

    certified_pointer = on_sql(reading.certified_pointer)
    latest_holds_as_of = on_sql(latest.holds_as_of)
    certified_load_dates = on_sql(reading.certified_load_dates)
    applied_reconciliation = on_sql(aggregates.applied_reconciliation)
    first_applied = on_sql(reading.first_applied)
    candidate_aggregates = on_sql(aggregates.candidates)


class PublicationWrites(OverSql):
    """The publish procedure's writes (``storage/publish/steps.py``)."""

    record_failed_candidate = on_sql(certify.record_failed_candidate)
    last_publications = on_sql(publish_recording.last_publications)
    record_publications = on_sql(publish_recording.record_publications)
    insert_aggregate_versions = on_sql(aggregates.insert_versions)
    release_queue = on_sql(aggregates.release_queue)


class LandingRecords(LandingReads):
    record_skip = on_sql(written_once.record_skip)
