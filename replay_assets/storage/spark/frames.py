"""Frames between the process and a Spark Connect session, through Arrow (no row loops)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import polars as pl
import pyarrow as pa
from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema

# Spark Connect sends a local frame inside the plan, and gRPC refuses a message over 128 MiB
# (RESOURCE_EXHAUSTED, first met landing 1M events): a larger frame goes to the engine in slices
# of at most this many Arrow bytes, appended to a scratch Delta table it is then read from
LOCAL_BYTES = 32 * 2**20


def to_spark(spark: SparkSession, frame: pl.DataFrame) -> DataFrame:
    """``frame`` as a Spark DataFrame. The schema is passed along: Spark cannot infer one from an
    empty table (``CANNOT_INFER_EMPTY_SCHEMA``), and a load date may touch nothing."""
    table = frame.to_arrow()
    return spark.createDataFrame(table, schema=from_arrow_schema(table.schema))


def local_frame(spark: SparkSession, table: pa.Table, scratch: Callable[[], str]) -> DataFrame:
    """``table`` as a Spark frame: sent in the plan when it is small, else written in slices to
    the scratch Delta table ``scratch()`` names and read from there (``LOCAL_BYTES``)."""
    schema = from_arrow_schema(table.schema)
    if table.nbytes <= LOCAL_BYTES:
        return spark.createDataFrame(table, schema=schema)
    path = scratch()
    rows = max(1, table.num_rows * LOCAL_BYTES // table.nbytes)
    for start in range(0, table.num_rows, rows):
        part = spark.createDataFrame(table.slice(start, rows), schema=schema)
        part.write.format("delta").mode("append").save(path)
    return spark.read.format("delta").load(path)


def first_of(rows: DataFrame, partition: Sequence[str], *order: Column) -> DataFrame:
    """The first row of each ``partition`` group in ``order`` (DuckDB's ``QUALIFY row_number()
    OVER (...) = 1``, which Sail does not parse)."""
    ranked = Window.partitionBy(*partition).orderBy(*order)
    return rows.withColumn("_n", F.row_number().over(ranked)).where(F.col("_n") == 1).drop("_n")


def newest_per_key(rows: DataFrame, key: Sequence[str]) -> DataFrame:
    """Each key's row of the newest load date among ``rows``."""
    return first_of(rows, key, F.col("load_date").desc())


def to_polars(df: DataFrame) -> pl.DataFrame:
    """Collect ``df`` into the process as a polars frame."""
    collected = pl.from_arrow(df.toArrow())
    assert isinstance(collected, pl.DataFrame)
    return collected
