"""Small records the shell keeps in the warehouse beside what they describe: the operator note of
each backfill, and the sensors' cursors."""

from __future__ import annotations

import datetime as dt

import duckdb

from replay_assets.storage.db.warehouse import one


def record_backfill(
    con: duckdb.DuckDBPyConnection,
    backfill_id: str,
    *,
    asset: str,
    first: str,
    last: str,
    note: str,
    operator: str,
    now: dt.datetime,
) -> None:
    con.execute(
        "INSERT OR REPLACE INTO backfills ("
        "backfill_id, asset, from_partition, to_partition, lane, note, operator, created_at"
        ") VALUES (?, ?, ?, ?, 'backfill', ?, ?, ?)",
        [backfill_id, asset, first, last, note, operator, now],
    )


def sensor_cursor(con: duckdb.DuckDBPyConnection, sensor: str) -> str | None:
    row = one(con, "SELECT cursor FROM sensor_cursors WHERE name = ?", [sensor])
    return str(row[0]) if row else None


def save_sensor_cursor(con: duckdb.DuckDBPyConnection, sensor: str, cursor: str) -> None:
    con.execute("INSERT OR REPLACE INTO sensor_cursors (name, cursor) VALUES (?, ?)", [sensor, cursor])
