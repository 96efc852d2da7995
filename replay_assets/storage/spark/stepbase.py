"""What the Spark adapter's apply and publish steps share (``apply.py``, ``latest.py``,
``gate.py``, ``publish.py``): whether the latest tables hold a state, views kept as they are
now, and appends the engine computes."""

from __future__ import annotations

import polars as pl
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_type

from replay_assets.storage.rules.latest import LATEST
from replay_assets.storage.spark import schema
from replay_assets.storage.spark.unit import UnitBase

# removes a table's rows of the source's load date (Sail 0.7 refuses DELETE with a subquery)
DELETE_DAY = "MERGE INTO {target} t USING {source} s ON t.load_date = s.load_date WHEN MATCHED THEN DELETE"


def latest_holds_before(u: UnitBase, day: str) -> bool:
    """Whether the latest tables are the state just before ``day`` (``latest.holds_before``)."""
    return _newest(u, *LATEST) <= day and _newest(u, *(v[0] for v in LATEST.values())) < day


def latest_holds_as_of(u: UnitBase, day: str) -> bool:
    """Whether the latest tables are the state as of ``day`` (``latest.holds_as_of``)."""
    return _newest(u, *LATEST) <= day


def _newest(u: UnitBase, *tables: str) -> str:
    """The newest load date any of ``tables`` holds ("" for none)."""
    found = [u.frame(t).agg(F.max("load_date").alias("d")).collect()[0]["d"] for t in tables]
    return max((str(d) for d in found if d is not None), default="")


def keep(u: UnitBase, view: str, frame: DataFrame) -> None:
    """``frame`` computed now and kept as ``view``, unchanged by later writes: written by the
    engine to a scratch Delta table of the unit and read from there (it never comes to this
    process)."""
    u.kept(frame).createOrReplaceTempView(view)


def local_view(u: UnitBase, view: str, frame: pl.DataFrame) -> None:
    """A polars frame as the local Spark frame ``view`` (through Arrow, its schema passed along)."""
    u.local(frame.to_arrow()).createOrReplaceTempView(view)


def append_from_engine(u: UnitBase, table: str, rows: DataFrame) -> int:
    """Append the engine's ``rows`` to ``table`` as one commit, none for no row: the rows never
    come to this process, and the engine computes them once (their number comes from the
    commit's log entry). Returns it."""
    return u.writing().appended(table, cast_to(table, rows))


def cast_to(table: str, rows: DataFrame) -> DataFrame:
    """``rows`` as ``table``'s columns, by name, cast to its types; a missing one null."""
    names = set(rows.columns)
    return rows.select(
        *[
            (F.col(f.name) if f.name in names else F.lit(None)).cast(from_arrow_type(f.type)).alias(f.name)
            for f in schema.schemas()[table]
        ]
    )
