"""Publishing daily aggregates on DuckDB: the statements of the steps (``steps.PublishSteps``) of
the engine-neutral procedure (``procedure.publish_aggregates``)."""

from __future__ import annotations

import datetime as dt

import duckdb
import polars as pl

from replay_assets.storage.db.warehouse import insert_frame, query_frame
from replay_assets.storage.rules.aggregates import SQL_AGGREGATES
from replay_assets.storage.rules.tables import ORDER_COLUMNS


def lines_for_dates(con: duckdb.DuckDBPyConnection, as_of: str, dates: list[str]) -> pl.DataFrame:
    """Order lines whose state as of ``as_of`` is on one of ``dates``. Only keys with some row
    on those dates can be (the state's own row is one), so the window ranks just those keys."""
    cols = ", ".join(f"h.{c}" for c in ORDER_COLUMNS)
    return query_frame(
        con,
        f"""
        SELECT * FROM (
          SELECT {cols} FROM order_history h SEMI JOIN (
              SELECT order_id, line_no FROM order_history
              WHERE load_date <= ? AND list_contains(?, business_date)) k
            ON h.order_id = k.order_id AND h.line_no = k.line_no
          WHERE h.load_date <= ?
          QUALIFY row_number() OVER (PARTITION BY h.order_id, h.line_no ORDER BY h.load_date DESC) = 1)
        WHERE list_contains(?, business_date)""",
        [as_of, dates, as_of, dates],
    )


def latest_lines(con: duckdb.DuckDBPyConnection, dates: list[str]) -> pl.DataFrame:
    """Order lines on one of ``dates`` in the latest tables (the state as of the newest date)."""
    cols = ", ".join(ORDER_COLUMNS)
    return query_frame(con, f"SELECT {cols} FROM order_latest WHERE list_contains(?, business_date)", [dates])


def recomputed(
    con: duckdb.DuckDBPyConnection, dates: list[str], *, as_of: str, from_latest: bool
) -> pl.DataFrame:
    """The aggregates of ``dates`` by SQL over the state as of ``as_of`` (another path than the
    candidates' polars one)."""
    state, params = ("order_latest", {}) if from_latest else ("orders_as_of($as_of)", {"as_of": as_of})
    return query_frame(con, SQL_AGGREGATES.format(state=state), {**params, "dates": dates})


def insert_versions(con: duckdb.DuckDBPyConnection, versions: pl.DataFrame) -> None:
    insert_frame(con, "aggregate_versions", versions)


def release_queue(
    con: duckdb.DuckDBPyConnection, day: str, *, as_of: str, now: dt.datetime, run_id: str | None
) -> None:
    """The queued groups of ``day`` up to ``as_of`` are published: released by this run."""
    con.execute(
        """UPDATE restatement_queue SET released_at = ?, released_by = ?
                   WHERE business_date = ? AND load_date <= ? AND released_at IS NULL""",
        [now, run_id, day, as_of],
    )


def pending_groups(con: duckdb.DuckDBPyConnection) -> list[tuple[str, str, str, str]]:
    """The queued groups a restatement will publish: (business date, store, load date, queued
    at as text), of load dates the published pointer has reached, in order."""
    rows = con.execute("""
        SELECT business_date, store_id, load_date, CAST(queued_at AS VARCHAR)
        FROM restatement_queue WHERE released_at IS NULL
          AND load_date <= (SELECT max(value) FROM pointers WHERE name = 'published_load_date')
        ORDER BY 1, 2, 3""").fetchall()
    return [(str(r[0]), str(r[1]), str(r[2]), str(r[3])) for r in rows]  # all VARCHAR but queued_at
