"""The sensors' cursors, kept in the warehouse beside what they describe."""

from __future__ import annotations

from replay_assets.storage.evidence import notes
from replay_assets.usecases.context import Pipeline


def cursor(pipeline: Pipeline, sensor: str) -> str | None:
    with pipeline.warehouse.connect() as con:
        return notes.sensor_cursor(con, sensor)


def save_cursor(pipeline: Pipeline, sensor: str, cursor: str) -> None:
    with pipeline.warehouse.transaction() as con:
        notes.save_sensor_cursor(con, sensor, cursor)
