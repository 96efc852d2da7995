"""The daily aggregates' shared statement rendered for Spark (``spark/dialect.shared``) equals the
core's oracle ``aggregate_images`` on generated order lines, on a real Sail server; and the same
statement on DuckDB equals it too on the same cases. So does the gate's
recomputation, the order-by-order statement, on both engines."""

from __future__ import annotations

import datetime as dt
from typing import Any

import duckdb
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyspark.sql import SparkSession

from replay_assets.core.aggregate import AGGREGATE_COLUMNS, aggregate_images
from replay_assets.storage.rules.aggregates import SQL_AGGREGATES, SQL_AGGREGATES_BY_ORDER
from replay_assets.storage.spark.dialect import shared
from replay_assets.storage.spark.frames import to_polars, to_spark

DATES = ["2026-09-19", "2026-09-20", "2026-09-21"]
LINE_SCHEMA = pl.Schema(
    {
        "order_id": pl.String,
        "line_no": pl.Int64,
        "store_id": pl.String,
        "business_date": pl.Date,
        "quantity": pl.Int64,
        "amount_minor": pl.Int64,
        "cost_minor": pl.Int64,
        "status": pl.String,
    }
)
line = st.fixed_dictionaries(
    {
        "order_id": st.sampled_from(["o1", "o2", "o3", "o4"]),
        "line_no": st.integers(1, 3),
        "store_id": st.sampled_from(["s1", "s2"]),
        "business_date": st.sampled_from([dt.date.fromisoformat(d) for d in DATES]),
        "quantity": st.integers(0, 5),
        "amount_minor": st.integers(-500, 5000),
        "cost_minor": st.integers(0, 3000),
        "status": st.sampled_from(["active", "active", "cancelled", "deleted"]),
    }
)
cases = st.tuples(
    st.lists(line, max_size=16, unique_by=lambda r: (r["order_id"], r["line_no"])),
    st.lists(st.sampled_from(DATES), min_size=1, max_size=3, unique=True),
)


def oracle(lines: list[dict[str, Any]], dates: list[str]) -> list[dict[str, Any]]:
    images = [{**r, "business_date": r["business_date"].isoformat()} for r in lines]
    return [row for row in aggregate_images(images) if row["business_date"] in dates]


def as_rows(frame: pl.DataFrame) -> list[dict[str, Any]]:
    return [{c: row[c] for c in AGGREGATE_COLUMNS} for row in frame.iter_rows(named=True)]


@pytest.mark.parametrize("by_order", [False, True], ids=["by_line", "by_order"])
@settings(max_examples=40, deadline=None)
@given(case=cases)
def test_spark_daily_aggregates_equal_the_oracle(
    spark: SparkSession, by_order: bool, case: tuple[list[dict[str, Any]], list[str]]
) -> None:
    lines, dates = case
    to_spark(spark, pl.DataFrame(lines, schema=LINE_SCHEMA)).createOrReplaceTempView("_state")
    statement = SQL_AGGREGATES_BY_ORDER if by_order else SQL_AGGREGATES
    found = shared(spark, statement.format(state="_state"), {"dates": dates})
    assert as_rows(to_polars(found)) == oracle(lines, dates)


@pytest.mark.parametrize("statement", [SQL_AGGREGATES, SQL_AGGREGATES_BY_ORDER], ids=["by_line", "by_order"])
@settings(max_examples=40, deadline=None)
@given(case=cases)
def test_the_shared_statement_on_duckdb_equals_the_oracle(
    statement: str, case: tuple[list[dict[str, Any]], list[str]]
) -> None:
    lines, dates = case
    con = duckdb.connect()
    try:
        con.register("_state", pl.DataFrame(lines, schema=LINE_SCHEMA))
        found = con.sql(statement.format(state="_state"), params={"dates": dates}).pl()
    finally:
        con.close()
    assert as_rows(found) == oracle(lines, dates)
