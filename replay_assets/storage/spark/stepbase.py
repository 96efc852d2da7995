"""What the Spark adapter's apply steps stand on (``apply.py``, ``latest.py``, ``gate.py``): the
unit's tables as its writer sees them, queries over them, and frames kept as they are now."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import polars as pl
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_type

from replay_assets.storage.rules.latest import LATEST
from replay_assets.storage.spark import schema
from replay_assets.storage.spark.facts import FactsOps

# removes a table's rows of the source's load date (Sail 0.7 refuses DELETE with a subquery)
DELETE_DAY = "MERGE INTO {target} t USING {source} s ON t.load_date = s.load_date WHEN MATCHED THEN DELETE"


class StepBase:
    def __init__(self, unit: FactsOps) -> None:
        self.unit = unit
        self.spark = unit.spark

    # ------------------------------------------------------------------ helpers

    def _table(self, table: str) -> DataFrame:
        return self.unit.frame(table)

    def latest_holds_before(self, day: str) -> bool:
        """Whether the latest tables are the state just before ``day`` (``latest.holds_before``)."""
        return self._newest(*LATEST) <= day and self._newest(*(v[0] for v in LATEST.values())) < day

    def latest_holds_as_of(self, day: str) -> bool:
        """Whether the latest tables are the state as of ``day`` (``latest.holds_as_of``)."""
        return self._newest(*LATEST) <= day

    def _newest(self, *tables: str) -> str:
        """The newest load date any of ``tables`` holds ("" for none)."""
        found = [self._table(t).agg(F.max("load_date").alias("d")).collect()[0]["d"] for t in tables]
        return max((str(d) for d in found if d is not None), default="")

    def _sql(self, text: str, **args: Any) -> DataFrame:
        return self.unit.sql(text, **args)

    def _keep(self, view: str, frame: DataFrame) -> None:
        """``frame`` computed now and kept as ``view``, unchanged by later writes: written by the
        engine to a scratch Delta table of the unit and read from there (it never comes to this
        process)."""
        self.unit.kept(frame).createOrReplaceTempView(view)

    def _frame_of(self, frame: pl.DataFrame) -> DataFrame:
        """A polars frame as a local Spark frame (through Arrow, its schema passed along)."""
        return self.unit.local(frame.to_arrow())

    def _local(self, view: str, frame: pl.DataFrame) -> None:
        self._frame_of(frame).createOrReplaceTempView(view)

    def _merge_sql(
        self, table: str, rows: pl.DataFrame, statement: str, *, matches: Sequence[str] | None = None
    ) -> None:
        """One ``MERGE`` of ``rows`` into ``table`` (``{target}``, ``{source}`` in ``statement``)."""
        self.unit.merge_frame(table, self.unit.table_frame(table, rows), statement, matches=matches)


def append_from_engine(unit: FactsOps, table: str, rows: DataFrame) -> int:
    """Append the engine's ``rows`` to ``table`` as one commit, none for no row: the rows never
    come to this process, and the engine computes them once (their number comes from the
    commit's log entry). Returns it."""
    return unit.writing().appended(table, cast_to(table, rows))


def cast_to(table: str, rows: DataFrame) -> DataFrame:
    """``rows`` as ``table``'s columns, by name, cast to its types; a missing one null."""
    names = set(rows.columns)
    return rows.select(
        *[
            (F.col(f.name) if f.name in names else F.lit(None)).cast(from_arrow_type(f.type)).alias(f.name)
            for f in schema.schemas()[table]
        ]
    )
