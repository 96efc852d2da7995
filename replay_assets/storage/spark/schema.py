"""The warehouse's tables on Delta, from the shared table rules (``rules/schema.py``): one
declaration, two engines. DuckDB's migrations declare the same tables and a test holds them equal,
so a column added to both reaches the Delta tables with its type. Delta has no primary keys: the
Spark unit keeps each key unique itself (``keys`` names them, from the same rules).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_type

from replay_assets.storage.rules.schema import KEYS, TABLES, columns

# DuckDB's type names as Arrow types (what DuckDB itself gives for them, time zones as UTC)
ARROW_TYPES = {
    "VARCHAR": pa.string(),
    "BIGINT": pa.int64(),
    "INTEGER": pa.int32(),
    "TINYINT": pa.int8(),
    "DOUBLE": pa.float64(),
    "HUGEINT": pa.decimal128(38, 0),
    "TIMESTAMPTZ": pa.timestamp("us", tz="UTC"),
}


@functools.cache
def schemas() -> Mapping[str, pa.Schema]:
    """Every warehouse table's columns, as Arrow types, by table name."""
    return {
        table: pa.schema([(name, ARROW_TYPES[kind]) for name, kind in columns(table)]) for table in TABLES
    }


def keys() -> Mapping[str, tuple[str, ...]]:
    """The primary key of every table that has one."""
    return KEYS


def cast_to(table: str, rows: DataFrame) -> DataFrame:
    """``rows`` as ``table``'s columns, by name, cast to its types; a missing one null."""
    names = set(rows.columns)
    return rows.select(
        *[
            (F.col(f.name) if f.name in names else F.lit(None)).cast(from_arrow_type(f.type)).alias(f.name)
            for f in schemas()[table]
        ]
    )
