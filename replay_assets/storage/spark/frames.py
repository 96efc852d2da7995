"""Frames between the process and a Spark Connect session, through Arrow (no row loops)."""

from __future__ import annotations

import polars as pl
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.pandas.types import from_arrow_schema


def to_spark(spark: SparkSession, frame: pl.DataFrame) -> DataFrame:
    """``frame`` as a Spark DataFrame. The schema is passed along: Spark cannot infer one from an
    empty table (``CANNOT_INFER_EMPTY_SCHEMA``), and a load date may touch nothing."""
    table = frame.to_arrow()
    return spark.createDataFrame(table, schema=from_arrow_schema(table.schema))


def to_polars(df: DataFrame) -> pl.DataFrame:
    """Collect ``df`` into the process as a polars frame."""
    collected = pl.from_arrow(df.toArrow())
    assert isinstance(collected, pl.DataFrame)
    return collected
