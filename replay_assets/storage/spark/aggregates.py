"""Daily aggregates in Spark SQL: the shared statement (``rules/aggregates.py``, the contract of
``core.aggregate.aggregate_images``) rendered for Spark; a property test on a real Sail server
holds it to the core's oracle."""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession

from replay_assets.storage.rules.aggregates import SQL_AGGREGATES, SQL_AGGREGATES_BY_ORDER
from replay_assets.storage.rules.render import Engine, render


def daily_aggregates(
    spark: SparkSession, state: str, dates: list[str], *, by_order: bool = False
) -> DataFrame:
    """The aggregate rows of ``dates`` (ISO business dates) over the order lines of the session's
    view ``state`` (one row per key, the current-state columns), ordered by store and date;
    ``by_order``: by the gate's recomputation statement (``SQL_AGGREGATES_BY_ORDER``)."""
    if not state.isidentifier():
        raise ValueError(f"not a view name: {state[:64]!r}")
    statement = SQL_AGGREGATES_BY_ORDER if by_order else SQL_AGGREGATES
    return spark.sql(render(statement.format(state=state), Engine.SPARK), args={"dates": dates})
