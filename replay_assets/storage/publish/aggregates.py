"""Publishing daily aggregates on DuckDB: the statements of the steps (``steps.PublishSteps``) of
the engine-neutral procedure (``procedure.publish_aggregates``)."""

from __future__ import annotations

import datetime as dt

import duckdb
import polars as pl

from replay_assets.storage.db.warehouse import insert_frame, query_frame
from replay_assets.storage.rules.aggregates import SQL_AGGREGATES_BY_ORDER, candidate_aggregates


def candidates(
    con: duckdb.DuckDBPyConnection, dates: list[str], *, as_of: str, from_latest: bool
) -> pl.DataFrame:
    """The candidate aggregates of ``dates`` as of ``as_of``, by the shared statement
    (``rules.aggregates.candidate_aggregates``): no order line leaves the engine."""
    sql = candidate_aggregates("order_latest" if from_latest else None, "order_history")
    params: dict[str, object] = {"dates": dates} if from_latest else {"dates": dates, "as_of": as_of}
    return query_frame(con, sql, params)


def recomputed(
    con: duckdb.DuckDBPyConnection, dates: list[str], *, as_of: str, from_latest: bool
) -> pl.DataFrame:
    """The aggregates of ``dates`` recomputed order by order (``SQL_AGGREGATES_BY_ORDER``, another
    statement than the candidates') over the state as of ``as_of``: the latest tables, or else the
    whole state by the history macro (another path to it than the candidates' lines of those dates)."""
    state, params = ("order_latest", {}) if from_latest else ("orders_as_of($as_of)", {"as_of": as_of})
    return query_frame(con, SQL_AGGREGATES_BY_ORDER.format(state=state), {**params, "dates": dates})


def insert_versions(con: duckdb.DuckDBPyConnection, versions: pl.DataFrame) -> None:
    insert_frame(con, "aggregate_versions", versions)


def release_queue(
    con: duckdb.DuckDBPyConnection, days: list[str], *, as_of: str, now: dt.datetime, run_id: str | None
) -> None:
    """The queued groups of ``days`` up to ``as_of`` are published: released by this run."""
    con.execute(
        """UPDATE restatement_queue SET released_at = ?, released_by = ?
                   WHERE list_contains(?, business_date) AND load_date <= ? AND released_at IS NULL""",
        [now, run_id, days, as_of],
    )
