"""The DuckDB adapter's steps of publishing daily aggregates (``storage/publish/steps.py``)."""

from __future__ import annotations

import duckdb

from replay_assets.storage.apply import latest, reading
from replay_assets.storage.duckdb_adapter.binding import OnConnection, bound
from replay_assets.storage.publish import aggregates, certify
from replay_assets.storage.publish import recording as publish_recording
from replay_assets.storage.rules.sql import on_sql


class DuckDBCandidateSteps(OnConnection):
    certified_pointer = on_sql(reading.certified_pointer)
    latest_holds_as_of = on_sql(latest.holds_as_of)
    recomputed_aggregates = bound(aggregates.recomputed)
    applied_reconciliation = bound(certify.applied_reconciliation)
    first_applied = on_sql(reading.first_applied)
    certified_load_dates = on_sql(reading.certified_load_dates)
    candidate_aggregates = bound(aggregates.candidates)


class DuckDBPublicationWrites(OnConnection):
    record_failed_candidate = bound(certify.record_failed_candidate)
    last_publications = on_sql(publish_recording.last_publications)
    record_publications = on_sql(publish_recording.record_publications)
    insert_aggregate_versions = bound(aggregates.insert_versions)
    release_queue = bound(aggregates.release_queue)


class DuckDBPublishSteps:
    def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
        self.candidates = DuckDBCandidateSteps(con)
        self.publications = DuckDBPublicationWrites(con)
