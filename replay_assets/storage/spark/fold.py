"""The fold of one load date in Spark SQL: the DuckDB adapter's statement
(``storage/apply/fold_sql.py``, the contract of :mod:`core.fold`), rendered for Spark. The core's
sequential ``fold_reference`` is the oracle of both; a property test on a real Sail server proves
this rendering equals it, conflicts included (``replay_assets_tests/spark/test_spark_fold.py``).

Reads the session's views ``_events``, ``_committed`` and ``_registry`` (columns as in
``fold_sql``) and returns ``pos, outcome, rule, winner, new_id``, computed lazily.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession

from replay_assets.storage.rules.fold import FOLD_PARAMS, FOLD_SQL
from replay_assets.storage.spark.dialect import render

SPARK_FOLD_SQL = render(FOLD_SQL, FOLD_PARAMS)


def fold(spark: SparkSession, statement: str = SPARK_FOLD_SQL) -> DataFrame:
    """Fold the session's ``_events`` onto ``_committed`` and ``_registry``: one row per event."""
    return spark.sql(statement, args=FOLD_PARAMS)
