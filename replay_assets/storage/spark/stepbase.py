"""What the Spark adapter's apply steps stand on (``apply.py``, ``latest.py``, ``gate.py``): the
unit's tables as its writer sees them, queries over them, and frames kept as they are now."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import polars as pl
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema

from replay_assets.storage.spark import schema
from replay_assets.storage.spark.facts import FactsOps
from replay_assets.storage.spark.frames import to_polars

# removes a table's rows of the source's load date (Sail 0.7 refuses DELETE with a subquery)
DELETE_DAY = "MERGE INTO {target} t USING {source} s ON t.load_date = s.load_date WHEN MATCHED THEN DELETE"


class StepBase:
    def __init__(self, unit: FactsOps) -> None:
        self.unit = unit
        self.spark = unit.spark

    # ------------------------------------------------------------------ helpers

    def _table(self, table: str) -> DataFrame:
        return self.unit.frame(table)

    def _newest(self, table: str) -> str:
        found = self._table(table).agg(F.max("load_date").alias("d")).collect()
        return str(found[0]["d"]) if found and found[0]["d"] is not None else ""

    def _sql(self, text: str, **args: Any) -> DataFrame:
        """``text`` with ``{table}`` naming the warehouse's tables as this unit sees them."""
        names = {t: self._view(t) for t in schema.schemas() if "{" + t + "}" in text}
        return self.spark.sql(text.format(**names), args=args)

    def _view(self, table: str) -> str:
        view = f"_t_{table}"
        self._table(table).createOrReplaceTempView(view)
        return view

    def _keep(self, view: str, frame: DataFrame) -> None:
        """``frame`` computed now and kept as ``view``, unchanged by later writes."""
        self._local(view, to_polars(frame))

    def _frame_of(self, frame: pl.DataFrame) -> DataFrame:
        """A polars frame as a local Spark frame (through Arrow, its schema passed along)."""
        table = frame.to_arrow()
        return self.spark.createDataFrame(table, schema=from_arrow_schema(table.schema))

    def _local(self, view: str, frame: pl.DataFrame) -> None:
        table = frame.to_arrow()
        self.spark.createDataFrame(table, schema=from_arrow_schema(table.schema)).createOrReplaceTempView(
            view
        )

    def _merge_sql(
        self, table: str, rows: pl.DataFrame, statement: str, *, matches: Sequence[str] | None = None
    ) -> None:
        """One ``MERGE`` of ``rows`` into ``table`` (``{target}``, ``{source}`` in ``statement``)."""
        columns = schema.schemas()[table]
        missing = [pl.lit(None).alias(n) for n in columns.names if n not in rows.columns]
        arrow = rows.with_columns(missing).select(columns.names).to_arrow().cast(columns)
        source = self.spark.createDataFrame(arrow, schema=from_arrow_schema(columns))
        self.unit.merge_frame(table, source, statement, matches=matches)
