"""The sensors' cursors, kept in the warehouse beside what they describe."""

from __future__ import annotations

from replay_assets.storage.db.warehouse import one
from replay_assets.usecases.context import Pipeline


def cursor(pipeline: Pipeline, sensor: str) -> str | None:
    with pipeline.warehouse.connect() as con:
        row = one(con, "SELECT cursor FROM sensor_cursors WHERE name = ?", [sensor])
    return str(row[0]) if row else None


def save_cursor(pipeline: Pipeline, sensor: str, cursor: str) -> None:
    with pipeline.warehouse.transaction() as con:
        con.execute("INSERT OR REPLACE INTO sensor_cursors (name, cursor) VALUES (?, ?)", [sensor, cursor])
