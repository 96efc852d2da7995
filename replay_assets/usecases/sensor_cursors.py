"""The sensors' cursors, kept in the warehouse beside what they describe."""

from __future__ import annotations

from replay_assets.usecases.context import Pipeline


def cursor(pipeline: Pipeline, sensor: str) -> str | None:
    with pipeline.store.connect() as unit:
        return unit.sensor_cursor(sensor)


def save_cursor(pipeline: Pipeline, sensor: str, cursor: str) -> None:
    with pipeline.store.transaction() as unit:
        unit.save_sensor_cursor(sensor, cursor)
