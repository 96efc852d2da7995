"""The DuckDB adapter's steps of publishing daily aggregates (``storage/publish/steps.py``)."""

from __future__ import annotations

import duckdb
import polars as pl

from replay_assets.storage.apply import latest, reading
from replay_assets.storage.duckdb_adapter.binding import OnConnection
from replay_assets.storage.publish import aggregates, certify
from replay_assets.storage.publish import recording as publish_recording
from replay_assets.storage.rules.aggregates import SQL_AGGREGATES_BY_ORDER
from replay_assets.storage.rules.sql import on_sql


class DuckDBCandidateSteps(OnConnection):
    certified_pointer = on_sql(reading.certified_pointer)
    latest_holds_as_of = on_sql(latest.holds_as_of)

    def recomputed_aggregates(self, dates: list[str], *, as_of: str, from_latest: bool) -> pl.DataFrame:
        """The aggregates of ``dates`` recomputed order by order (``SQL_AGGREGATES_BY_ORDER``,
        another statement than the candidates') over the state as of ``as_of``: the latest
        tables, or else the whole state by the history macro (another path to it than the
        candidates' lines of those dates)."""
        state, params = ("order_latest", {}) if from_latest else ("orders_as_of($as_of)", {"as_of": as_of})
        return self.sql.frame(SQL_AGGREGATES_BY_ORDER.format(state=state), **params, dates=dates)

    applied_reconciliation = on_sql(aggregates.applied_reconciliation)
    first_applied = on_sql(reading.first_applied)
    certified_load_dates = on_sql(reading.certified_load_dates)
    candidate_aggregates = on_sql(aggregates.candidates)


class DuckDBPublicationWrites(OnConnection):
    record_failed_candidate = on_sql(certify.record_failed_candidate)
    last_publications = on_sql(publish_recording.last_publications)
    record_publications = on_sql(publish_recording.record_publications)
    insert_aggregate_versions = on_sql(aggregates.insert_versions)
    release_queue = on_sql(aggregates.release_queue)


class DuckDBPublishSteps:
    def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
        self.candidates = DuckDBCandidateSteps(con)
        self.publications = DuckDBPublicationWrites(con)
