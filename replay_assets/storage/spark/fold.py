"""The fold of one load date in Spark SQL: the shared statement (``rules/fold.py``, the contract
of :mod:`core.fold`) rendered for Spark. The core's sequential ``fold_reference`` is the oracle; a
property test on a real Sail server holds this rendering to it, conflicts included.

Reads the session's views ``_events``, ``_committed`` and ``_registry`` and returns ``pos,
outcome, rule, winner, new_id``, computed lazily.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession

from replay_assets.storage.rules.fold import FOLD_PARAMS, FOLD_SQL
from replay_assets.storage.rules.render import Engine, render

SPARK_FOLD_SQL = render(FOLD_SQL, Engine.SPARK)


def fold(spark: SparkSession, statement: str = SPARK_FOLD_SQL) -> DataFrame:
    """Fold the session's ``_events`` onto ``_committed`` and ``_registry``: one row per event."""
    return spark.sql(statement, args=FOLD_PARAMS)
