"""Daily aggregates in Spark SQL: the shared statement (``rules/aggregates.py``, the contract of
``core.aggregate.aggregate_images``) rendered for Spark; a property test on a real Sail server
holds it to the core's oracle."""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession

from replay_assets.storage.rules.aggregates import SQL_AGGREGATES
from replay_assets.storage.rules.render import Engine, render


def daily_aggregates(spark: SparkSession, state: str, dates: list[str]) -> DataFrame:
    """The aggregate rows of ``dates`` (ISO business dates) over the order lines of the session's
    view ``state`` (one row per key, the current-state columns), ordered by store and date."""
    if not state.isidentifier():
        raise ValueError(f"not a view name: {state[:64]!r}")
    return spark.sql(render(SQL_AGGREGATES.format(state=state), Engine.SPARK), args={"dates": dates})
