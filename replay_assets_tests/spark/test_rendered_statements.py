"""Each shared statement (``storage/rules``), written once in DuckDB's dialect, renders for Spark
and gives the same rows on both engines: DuckDB in memory and a real Sail server, over the same
tables."""

from __future__ import annotations

from typing import Any

import duckdb
import polars as pl
import pytest
from pyspark.sql import SparkSession

from replay_assets.core.fold import Committed, FoldInput
from replay_assets.storage.rules.aggregates import SQL_AGGREGATES
from replay_assets.storage.rules.apply import AFFECTED_GROUPS, HISTORY_ROWS
from replay_assets.storage.rules.fold import FOLD_PARAMS, FOLD_SQL
from replay_assets.storage.rules.published import RECONCILE_SQL
from replay_assets.storage.rules.render import Engine, render
from replay_assets.storage.spark.frames import to_polars, to_spark
from replay_assets_tests.storage.test_fold_sql import as_frames

LINES = pl.DataFrame(
    {
        "order_id": ["o1", "o1", "o2", "o3"],
        "line_no": [1, 2, 1, 1],
        "store_id": ["s1", "s1", "s2", "s1"],
        "business_date": ["2026-09-19", "2026-09-19", "2026-09-20", "2026-09-21"],
        "quantity": [1, 2, 3, 4],
        "amount_minor": [100, 250, -40, 900],
        "cost_minor": [50, 100, 0, 300],
        "status": ["active", "active", "active", "deleted"],
    }
).with_columns(pl.col("business_date").str.to_date())
RECONCILIATION = pl.DataFrame(
    {
        "load_date": ["2026-09-20", "2026-09-20", "2026-09-21"],
        "batch_id": ["b1", "b2", "b3"],
        "source_events": [10, 5, 7],
        "accepted": [8, 5, 0],
        "rejected": [1, 0, 0],
        "skipped_duplicate": [1, 0, 0],
        "skipped_stale": [0, 0, 0],
        "status": ["APPLIED", "APPLIED", "BLOCKED"],
    }
)
EVENTS = [
    FoldInput(0, "erp", "e1", 1, "order_line", "k", 5, "c1", "i1"),
    FoldInput(1, "erp", "e2", 2, "order_line", "k", 3, "c2", "i2"),
    FoldInput(2, "erp", "e1", 1, "order_line", "k", 5, "c1", "i1"),
    FoldInput(3, "erp", "e4", 1, "order_line", "j", 2, "c4", "i4"),
]
FOLD_TABLES = dict(
    zip(
        ("_events", "_committed", "_registry"),
        as_frames(EVENTS, {("order_line", "k"): Committed(4, "i0")}, {}),
        strict=True,
    )
)

# the fold's winners and losers, an order line deleted and one moved to another store and date
FOLDED = pl.DataFrame(
    {
        "entity": ["order_line", "order_line", "order_line", "customer", "customer"],
        "key": ["o1|1", "o2|1", "o3|1", "c1", "c2"],
        "op": ["upsert", "delete", "upsert", "upsert", "delete"],
        "winner": [True, True, False, True, True],
        "order_id": ["o1", "o2", "o3", None, None],
        "line_no": [1, 1, 1, None, None],
        "store_id": ["s2", "s1", "s1", None, None],
        "customer_id": ["c1", "c1", "c2", "c1", "c2"],
        "product_id": ["p1", "p2", "p3", None, None],
        "business_date": ["2026-09-20", "2026-09-19", "2026-09-21", None, None],
        "quantity": [1, 2, 3, None, None],
        "amount_minor": [100, 200, 300, None, None],
        "cost_minor": [10, 20, 30, None, None],
        "status": ["active", "active", "active", None, None],
        "name": [None, None, None, "Ann", "Bo"],
        "segment": [None, None, None, "retail", "trade"],
        "version": [3, 2, 1, 5, 6],
        "source_seq": [11, 12, 13, 14, 15],
        "image_sha256": ["i1", "i2", "i3", "i4", "i5"],
    }
).with_columns(pl.col("business_date").str.to_date())
COMMITTED = pl.DataFrame(
    {
        "entity": ["order_line", "order_line", "order_line"],
        "key": ["o1|1", "o2|1", "o3|1"],
        "business_date": ["2026-09-19", "2026-09-19", "2026-09-22"],
        "store_id": ["s1", "s1", "s3"],
    }
).with_columns(pl.col("business_date").str.to_date())
APPLYING = {"_folded": FOLDED, "_committed": COMMITTED}


def on_duckdb(sql: str, tables: dict[str, pl.DataFrame], params: Any = None) -> list[dict[str, Any]]:
    con = duckdb.connect()
    for name, frame in tables.items():
        con.register(name, frame.to_arrow())
    rows: list[dict[str, Any]] = con.sql(render(sql, Engine.DUCKDB), params=params or []).pl().to_dicts()
    return rows


def on_spark(
    spark: SparkSession, sql: str, tables: dict[str, pl.DataFrame], params: Any = None
) -> list[dict[str, Any]]:
    for name, frame in tables.items():
        to_spark(spark, frame).createOrReplaceTempView(name)
    rows: list[dict[str, Any]] = to_polars(spark.sql(render(sql, Engine.SPARK), args=params)).to_dicts()
    return rows


STATEMENTS = {
    "fold": (FOLD_SQL + " ORDER BY pos", FOLD_TABLES, FOLD_PARAMS),
    "aggregates": (
        SQL_AGGREGATES.format(state="_lines"),
        {"_lines": LINES},
        {"dates": ["2026-09-19", "2026-09-20"]},
    ),
    "reconciliation": (RECONCILE_SQL, {"reconciliation": RECONCILIATION}, None),
    "affected groups": (AFFECTED_GROUPS + " ORDER BY business_date, store_id", APPLYING, None),
    **{
        table: (rows + " ORDER BY version", APPLYING, {"day": "2026-09-23"})
        for table, rows in HISTORY_ROWS.items()
    },
}


@pytest.mark.parametrize("name", sorted(STATEMENTS))
def test_a_shared_statement_gives_the_same_rows_on_both_engines(spark: SparkSession, name: str) -> None:
    sql, tables, params = STATEMENTS[name]
    expected = on_duckdb(sql, tables, params)
    assert expected  # the case exercises the statement
    assert on_spark(spark, sql, tables, params) == expected


def test_rendering_for_spark_keeps_literals_and_marks_parameters() -> None:
    statement = "WITH t AS MATERIALIZED (SELECT regexp_replace(v, '(a)', '$1') AS v FROM x WHERE k = $key) "
    rendered = render(statement + "SELECT list_contains($keys, v), CAST(v AS VARCHAR) FROM t", Engine.SPARK)
    assert rendered == (
        "WITH t AS (SELECT REGEXP_REPLACE(v, '(a)', '$1') AS v FROM x WHERE k = :key) "
        "SELECT ARRAY_CONTAINS(:keys, v), CAST(v AS STRING) FROM t"
    )
    assert render(statement, Engine.DUCKDB) == statement
