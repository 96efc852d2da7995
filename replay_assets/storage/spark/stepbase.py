"""What the Spark adapter's steps share: views kept as they are now, and local frames as views."""

from __future__ import annotations

import polars as pl
from pyspark.sql import DataFrame

from replay_assets.storage.spark.unit import UnitBase


def keep(u: UnitBase, view: str, frame: DataFrame) -> None:
    """``frame`` computed now and kept as ``view``, unchanged by later writes: written by the
    engine to a scratch Delta table of the unit and read from there (it never comes to this
    process)."""
    u.kept(frame).createOrReplaceTempView(view)


def local_view(u: UnitBase, view: str, frame: pl.DataFrame) -> None:
    """A polars frame as the local Spark frame ``view`` (through Arrow, its schema passed along)."""
    u.local(frame.to_arrow()).createOrReplaceTempView(view)
