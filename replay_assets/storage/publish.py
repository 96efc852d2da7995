"""Publishing daily aggregates and advancing the consumer pointer (versioned, monotone)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

import duckdb
import polars as pl

from replay_assets.core.aggregate import aggregate_frame, content_sha256
from replay_assets.storage.landing import insert_frame
from replay_assets.storage.migrations import ORDER_COLUMNS
from replay_assets.storage.status import Status, set_status
from replay_assets.storage.warehouse import one, query_frame

AGG_KEY = ["store_id", "business_date"]


@dataclass(frozen=True)
class Published:
    business_date: str
    version: int
    content_sha256: str
    new_version: bool
    rows: int


def latest_applied(con: duckdb.DuckDBPyConnection) -> str | None:
    row = one(con, "SELECT max(load_date) FROM load_dates")
    return str(row[0]) if row and row[0] is not None else None


def lines_for_dates(con: duckdb.DuckDBPyConnection, as_of: str, dates: list[str]) -> pl.DataFrame:
    cols = ", ".join(ORDER_COLUMNS)
    return query_frame(
        con,
        f"""
        SELECT * FROM (
          SELECT {cols} FROM order_history WHERE load_date <= ?
          QUALIFY row_number() OVER (PARTITION BY order_id, line_no ORDER BY load_date DESC) = 1)
        WHERE list_contains(?, business_date)""",
        [as_of, dates],
    )


def _last_publication(con: duckdb.DuckDBPyConnection, asset: str, key: str) -> tuple[int, str, str] | None:
    row = one(
        con,
        """SELECT version, content_sha256, as_of_load_date FROM publications
           WHERE asset = ? AND partition_key = ? ORDER BY version DESC LIMIT 1""",
        [asset, key],
    )
    return (int(row[0]), str(row[1]), str(row[2])) if row else None


def publish_aggregates(
    con: duckdb.DuckDBPyConnection, dates: list[str], run_id: str | None, now: dt.datetime
) -> list[Published]:
    """Recompute each business date from state as of the latest applied load date; publish a new
    version only when content changed (replay is a no-op); release its queued restatements."""
    as_of = latest_applied(con)
    if as_of is None:
        return []
    aggregates = aggregate_frame(lines_for_dates(con, as_of, dates))
    out = []
    for day in sorted(dates):
        rows = aggregates.filter(pl.col("business_date") == day)
        out.append(_publish_one(con, day, rows, as_of, run_id, now))
        con.execute(
            """UPDATE restatement_queue SET released_at = ?
                       WHERE business_date = ? AND load_date <= ? AND released_at IS NULL""",
            [now, day, as_of],
        )
    advance_pointer(con, run_id, now)
    return out


def _publish_one(
    con: duckdb.DuckDBPyConnection,
    day: str,
    rows: pl.DataFrame,
    as_of: str,
    run_id: str | None,
    now: dt.datetime,
) -> Published:
    digest = content_sha256(rows, AGG_KEY)
    last = _last_publication(con, "daily_aggregates", day)
    if last is not None and (last[1] == digest or last[2] > as_of):
        return Published(day, last[0], last[1], False, rows.height)
    version = 1 if last is None else last[0] + 1
    if rows.height:
        insert_frame(
            con,
            "aggregate_versions",
            rows.with_columns(
                pl.lit(version).cast(pl.Int64).alias("publication_version"),
                pl.lit(as_of).alias("as_of_load_date"),
                pl.lit(now).alias("certified_at"),
            ),
        )
    reason = "first publication" if last is None else f"restated as of load date {as_of}"
    _record_publication(con, "daily_aggregates", day, version, as_of, digest, run_id, reason, now)
    return Published(day, version, digest, True, rows.height)


def _record_publication(
    con: duckdb.DuckDBPyConnection,
    asset: str,
    key: str,
    version: int,
    as_of: str,
    digest: str,
    run_id: str | None,
    reason: str,
    now: dt.datetime,
) -> None:
    con.execute(
        "INSERT INTO publications VALUES (?, ?, ?, ?, ?, NULL, ?, ?, ?)",
        [asset, key, version, as_of, digest, now, run_id, reason],
    )
    status = Status.CERTIFIED if version == 1 else Status.RESTATED
    set_status(con, asset, [key], status, reason, now, (version, digest))


def advance_pointer(con: duckdb.DuckDBPyConnection, run_id: str | None, now: dt.datetime) -> str | None:
    """Move ``published_load_date`` to the newest applied load date whose restatements are all
    released (never backwards), and publish the snapshot record of every load date it covers."""
    row = one(
        con,
        """
        SELECT max(load_date) FROM load_dates WHERE load_date < coalesce(
          (SELECT min(load_date) FROM restatement_queue WHERE released_at IS NULL), '9999-12-31')
    """,
    )
    target = str(row[0]) if row and row[0] is not None else None
    current = one(con, "SELECT value FROM pointers WHERE name = 'published_load_date'")
    if target is None or (current is not None and str(current[0]) >= target):
        target = str(current[0]) if current else None
    else:
        con.execute("INSERT OR REPLACE INTO pointers VALUES ('published_load_date', ?)", [target])
    if target is not None:
        _publish_snapshots(con, target, run_id, now)
    return target


def _publish_snapshots(
    con: duckdb.DuckDBPyConnection, upto: str, run_id: str | None, now: dt.datetime
) -> None:
    changed = con.execute(
        """
        SELECT s.load_date, s.content_sha256 FROM snapshots s
        WHERE s.load_date <= ? AND s.content_sha256 IS DISTINCT FROM (
          SELECT p.content_sha256 FROM publications p
          WHERE p.asset = 'current_orders' AND p.partition_key = s.load_date
          ORDER BY p.version DESC LIMIT 1)
        ORDER BY s.load_date""",
        [upto],
    ).fetchall()
    for day, digest in changed:
        last = _last_publication(con, "current_orders", day)
        version = 1 if last is None else last[0] + 1
        reason = "load date applied" if last is None else "load date folded again"
        _record_publication(con, "current_orders", day, version, day, digest, run_id, reason, now)
