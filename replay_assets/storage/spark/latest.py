"""Each key's newest history row on Delta (the DuckDB adapter's ``storage/apply/latest.py``, whose
docstring states the invariant): the steps that keep the latest tables and their change log."""

from __future__ import annotations

import polars as pl
from pyspark.sql import functions as F

from replay_assets.storage.rules.latest import COLUMNS, DROPPED, LATEST
from replay_assets.storage.spark.frames import to_polars
from replay_assets.storage.spark.stepbase import DELETE_DAY, StepBase, append_from_engine


class LatestSteps(StepBase):
    def advance_latest(self, day: str) -> None:
        """Fold the history rows ``day`` wrote into the latest tables, logging the partitions the
        replaced rows leave and the new rows join (``latest.advance``)."""
        newest = self.latest_holds_as_of(day)
        parts = {}
        for history, (latest, key, entity, part) in LATEST.items():
            keys = ", ".join(key)
            written = f"(SELECT {keys} FROM {{{history}}} WHERE load_date = :day) n"
            on = " AND ".join(f"l.{c} = n.{c}" for c in key)
            parts[entity] = self._sql(
                f"""SELECT DISTINCT part FROM (
                    SELECT {_spark(part)} AS part FROM {{{latest}}} l LEFT SEMI JOIN {written} ON {on}
                    UNION ALL SELECT {_spark(part)} FROM {{{history}}} WHERE load_date = :day)""",
                day=day,
            )
        self._log(day, {entity: to_polars(frame) for entity, frame in parts.items()})
        for history, (latest, key, _entity, _part) in LATEST.items():
            keys = ", ".join(key)
            on = " AND ".join(f"t.{c} = s.{c}" for c in key)
            columns = ", ".join(COLUMNS[history])
            written = f"SELECT DISTINCT {keys} FROM {{{history}}} WHERE load_date = :day"
            # the keys and rows stay in the engine: read from the history table, which the
            # latest table's writes do not change
            merge = f"MERGE INTO {{target}} t USING {{source}} s ON {on} WHEN MATCHED THEN DELETE"
            self.unit.merge_frame(latest, self._sql(written, day=day), merge, matches=key)
            rows = (
                f"SELECT {columns} FROM {{{history}}} WHERE load_date = :day"
                if newest
                else f"""SELECT {columns} FROM (
                    SELECT h.*, row_number() OVER (PARTITION BY {", ".join(f"h.{c}" for c in key)}
                                                   ORDER BY h.load_date DESC) AS n
                    FROM {{{history}}} h LEFT SEMI JOIN (
                        SELECT {keys} FROM {{{history}}} WHERE load_date = :day) w
                      ON {" AND ".join(f"h.{c} = w.{c}" for c in key)}) WHERE n = 1"""
            )
            append_from_engine(self.unit, latest, self._sql(rows, day=day))

    def retract_latest(self, day: str) -> None:
        """After ``day``'s history rows were removed: each key whose newest row was ``day``'s takes
        its newest remaining row (none: the key did not exist before); the partitions the removed
        rows leave and the restored rows join are logged (``latest.retract``)."""
        parts = {}
        gone = self._frame_of(pl.DataFrame({"load_date": [day]}))
        for history, (latest, key, entity, part) in LATEST.items():
            retracted = to_polars(self._table(latest).where(F.col("load_date") == F.lit(day)))
            self.unit.merge_frame(latest, gone, DELETE_DAY, matches=("load_date",))
            self._local("_retracted", retracted.select(list(key)))
            columns = ", ".join(COLUMNS[history])
            on = " AND ".join(f"h.{c} = r.{c}" for c in key)
            restored = to_polars(
                self._sql(
                    f"""SELECT {columns} FROM (
                        SELECT h.*, row_number() OVER (PARTITION BY {", ".join(f"h.{c}" for c in key)}
                                                       ORDER BY h.load_date DESC) AS n
                        FROM {{{history}}} h LEFT SEMI JOIN _retracted r ON {on}) WHERE n = 1"""
                )
            )
            self.unit.append_frames(latest, [restored])
            moved = pl.concat([f.select(COLUMNS[history]) for f in (retracted, restored)])
            self._local("_moved", moved)
            parts[entity] = to_polars(self.spark.sql(f"SELECT DISTINCT {_spark(part)} AS part FROM _moved"))
        for view in ("_retracted", "_moved"):
            self.spark.catalog.dropTempView(view)
        self._log(day, parts)

    def _log(self, day: str, parts: dict[str, pl.DataFrame]) -> None:
        """Record, as one new change generation, the published partitions ``parts`` names."""
        logged = self._table("latest_changes").agg(F.max("generation").alias("g")).collect()
        dropped = self.unit.rows(self._table("pointers").where(F.col("name") == F.lit(DROPPED)))
        newest = max(int(logged[0]["g"] or 0) if logged else 0, int(dropped[0]["value"]) if dropped else 0)
        rows = [
            frame.with_columns(
                pl.lit(newest + 1).alias("generation"),
                pl.lit(day).alias("load_date"),
                pl.lit(entity).alias("entity"),
            )
            for entity, frame in parts.items()
        ]
        self.unit.append_frames("latest_changes", rows)


def log_removal(steps: LatestSteps, day: str) -> None:
    """The partitions of ``day``'s history rows, logged before they are removed
    (``latest.log_removal``); a function, not a method, so the steps' classes keep their size."""
    parts = {
        entity: to_polars(
            steps._sql(
                f"SELECT DISTINCT {_spark(part)} AS part FROM {{{history}}} WHERE load_date = :day",
                day=day,
            )
        )
        for history, (_latest, _key, entity, part) in LATEST.items()
    }
    steps._log(day, parts)


def _spark(part: str) -> str:
    """A partition expression of ``latest.LATEST`` in Spark SQL (no ``VARCHAR`` without length)."""
    return part.replace("AS VARCHAR", "AS STRING")
