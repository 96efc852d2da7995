"""The Spark adapter's fold (``storage/spark/fold.py``) equals the core's sequential oracle
``fold_reference`` on arbitrary inputs, conflicts included, on a real Sail server: the same
property the DuckDB fold is held to (``storage/test_fold_sql.py``), on the same generated cases."""

from __future__ import annotations

from hypothesis import given, settings
from pyspark.sql import SparkSession

from replay_assets.core.fold import Committed, FoldInput, fold_reference
from replay_assets.storage.rules.render import Engine, render
from replay_assets.storage.spark.dialect import over_tables
from replay_assets.storage.spark.fold import SPARK_FOLD_SQL, fold
from replay_assets.storage.spark.frames import to_polars, to_spark
from replay_assets_tests.storage.test_fold_sql import COARSE, as_frames, fold_inputs, frame_to_result

SPARK_COARSE = render(COARSE, Engine.SPARK)


def spark_fold(
    spark: SparkSession, case: tuple[list[FoldInput], dict, dict], statement: str = SPARK_FOLD_SQL
) -> object:
    for name, frame in zip(("_events", "_committed", "_registry"), as_frames(*case), strict=True):
        to_spark(spark, frame).createOrReplaceTempView(name)
    return frame_to_result(to_polars(fold(spark, statement).orderBy("pos")))


@settings(max_examples=60, deadline=None)
@given(fold_inputs())
def test_spark_fold_equals_oracle(spark: SparkSession, case: tuple[list[FoldInput], dict, dict]) -> None:
    expected = fold_reference(*case)
    assert spark_fold(spark, case) == expected
    assert spark_fold(spark, case, SPARK_COARSE) == expected


def test_spark_fold_fences_stale_and_picks_the_highest_version(spark: SparkSession) -> None:
    events = [
        FoldInput(0, "erp", "e1", 1, "order_line", "k", 5, "c1", "i1"),
        FoldInput(1, "erp", "e2", 2, "order_line", "k", 3, "c2", "i2"),  # below committed 4: stale
        FoldInput(2, "erp", "e1", 1, "order_line", "k", 5, "c1", "i1"),  # same id, same content
        FoldInput(3, "erp", "e3", 3, "order_line", "k", 7, "c3", "i3"),
    ]
    result = spark_fold(spark, (events, {("order_line", "k"): Committed(4, "i0")}, {}))
    assert result == fold_reference(events, {("order_line", "k"): Committed(4, "i0")}, {})
    assert [result.classified[p].outcome.value for p in range(4)] == [  # type: ignore[attr-defined]
        "accepted",
        "skipped_stale",
        "skipped_duplicate",
        "accepted",
    ]


def test_rendering_rewrites_only_the_statements_parameters() -> None:
    statement = (
        "WITH t AS MATERIALIZED (SELECT regexp_replace(v, '(a)', '$1') AS v FROM {costs} WHERE k = $key) "
    )
    assert over_tables(statement + "SELECT v FROM t JOIN pointers p ON p.name = t.v") == (
        "WITH t AS (SELECT REGEXP_REPLACE(v, '(a)', '$1') AS v FROM {costs} WHERE k = :key) "
        "SELECT v FROM t JOIN {pointers} AS p ON p.name = t.v"
    )
