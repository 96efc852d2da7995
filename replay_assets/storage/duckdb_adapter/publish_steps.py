"""The DuckDB adapter's steps of publishing daily aggregates (``storage/publish/steps.py``)."""

from __future__ import annotations

import duckdb
import polars as pl

from replay_assets.storage.capabilities import shared
from replay_assets.storage.db.sql import DuckDBSql
from replay_assets.storage.duckdb_adapter.binding import OnConnection
from replay_assets.storage.rules.aggregates import SQL_AGGREGATES_BY_ORDER


class DuckDBCandidateSteps(OnConnection, shared.CandidateReads):
    def recomputed_aggregates(self, dates: list[str], *, as_of: str, from_latest: bool) -> pl.DataFrame:
        """The aggregates of ``dates`` recomputed order by order (``SQL_AGGREGATES_BY_ORDER``,
        another statement than the candidates') over the state as of ``as_of``: the latest
        tables, or else the whole state by the history macro (another path to it than the
        candidates' lines of those dates)."""
        state, params = ("order_latest", {}) if from_latest else ("orders_as_of($as_of)", {"as_of": as_of})
        return self.sql.frame(SQL_AGGREGATES_BY_ORDER.format(state=state), **params, dates=dates)


class DuckDBPublishSteps:
    def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
        self.candidates = DuckDBCandidateSteps(con)
        self.publications = shared.PublicationWrites(DuckDBSql(con))
