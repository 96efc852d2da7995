"""Each key's newest history row on Delta (the DuckDB adapter's ``storage/apply/latest.py``, whose
docstring states the invariant): keeping the latest tables and their change log, as functions of
the unit the apply steps call."""

from __future__ import annotations

import polars as pl
from pyspark.sql import functions as F

from replay_assets.storage.rules.latest import COLUMNS, DROPPED, LATEST
from replay_assets.storage.spark.frames import to_polars
from replay_assets.storage.spark.stepbase import (
    DELETE_DAY,
    append_from_engine,
    latest_holds_as_of,
    local_view,
)
from replay_assets.storage.spark.unit import UnitBase


def advance_latest(u: UnitBase, day: str) -> None:
    """Fold the history rows ``day`` wrote into the latest tables, logging the partitions the
    replaced rows leave and the new rows join (``latest.advance``)."""
    newest = latest_holds_as_of(u, day)
    parts = {}
    for history, (latest, key, entity, part) in LATEST.items():
        keys = ", ".join(key)
        written = f"(SELECT {keys} FROM {{{history}}} WHERE load_date = :day) n"
        on = " AND ".join(f"l.{c} = n.{c}" for c in key)
        parts[entity] = u.sql(
            f"""SELECT DISTINCT part FROM (
                SELECT {_spark(part)} AS part FROM {{{latest}}} l LEFT SEMI JOIN {written} ON {on}
                UNION ALL SELECT {_spark(part)} FROM {{{history}}} WHERE load_date = :day)""",
            day=day,
        )
    _log(u, day, {entity: to_polars(frame) for entity, frame in parts.items()})
    for history, (latest, key, _entity, _part) in LATEST.items():
        keys = ", ".join(key)
        on = " AND ".join(f"t.{c} = s.{c}" for c in key)
        columns = ", ".join(COLUMNS[history])
        written = f"SELECT DISTINCT {keys} FROM {{{history}}} WHERE load_date = :day"
        # the keys and rows stay in the engine: read from the history table, which the
        # latest table's writes do not change
        merge = f"MERGE INTO {{target}} t USING {{source}} s ON {on} WHEN MATCHED THEN DELETE"
        u.merge_frame(latest, u.sql(written, day=day), merge, matches=key)
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
        append_from_engine(u, latest, u.sql(rows, day=day))


def retract_latest(u: UnitBase, day: str) -> None:
    """After ``day``'s history rows were removed: each key whose newest row was ``day``'s takes
    its newest remaining row (none: the key did not exist before); the partitions the removed
    rows leave and the restored rows join are logged (``latest.retract``)."""
    parts = {}
    gone = u.local(pl.DataFrame({"load_date": [day]}).to_arrow())
    for history, (latest, key, entity, part) in LATEST.items():
        retracted = to_polars(u.frame(latest).where(F.col("load_date") == F.lit(day)))
        u.merge_frame(latest, gone, DELETE_DAY, matches=("load_date",))
        local_view(u, "_retracted", retracted.select(list(key)))
        columns = ", ".join(COLUMNS[history])
        on = " AND ".join(f"h.{c} = r.{c}" for c in key)
        restored = to_polars(
            u.sql(
                f"""SELECT {columns} FROM (
                    SELECT h.*, row_number() OVER (PARTITION BY {", ".join(f"h.{c}" for c in key)}
                                                   ORDER BY h.load_date DESC) AS n
                    FROM {{{history}}} h LEFT SEMI JOIN _retracted r ON {on}) WHERE n = 1"""
            )
        )
        u.append_frames(latest, [restored])
        moved = pl.concat([f.select(COLUMNS[history]) for f in (retracted, restored)])
        local_view(u, "_moved", moved)
        parts[entity] = to_polars(u.spark.sql(f"SELECT DISTINCT {_spark(part)} AS part FROM _moved"))
    for view in ("_retracted", "_moved"):
        u.spark.catalog.dropTempView(view)
    _log(u, day, parts)


def log_removal(u: UnitBase, day: str) -> None:
    """The partitions of ``day``'s history rows, logged before they are removed
    (``latest.log_removal``)."""
    parts = {
        entity: to_polars(
            u.sql(
                f"SELECT DISTINCT {_spark(part)} AS part FROM {{{history}}} WHERE load_date = :day", day=day
            )
        )
        for history, (_latest, _key, entity, part) in LATEST.items()
    }
    _log(u, day, parts)


def _log(u: UnitBase, day: str, parts: dict[str, pl.DataFrame]) -> None:
    """Record, as one new change generation, the published partitions ``parts`` names."""
    logged = u.frame("latest_changes").agg(F.max("generation").alias("g")).collect()
    dropped = u.rows(u.frame("pointers").where(F.col("name") == F.lit(DROPPED)))
    newest = max(int(logged[0]["g"] or 0) if logged else 0, int(dropped[0]["value"]) if dropped else 0)
    rows = [
        frame.with_columns(
            pl.lit(newest + 1).alias("generation"),
            pl.lit(day).alias("load_date"),
            pl.lit(entity).alias("entity"),
        )
        for entity, frame in parts.items()
    ]
    u.append_frames("latest_changes", rows)


def _spark(part: str) -> str:
    """A partition expression of ``latest.LATEST`` in Spark SQL (no ``VARCHAR`` without length)."""
    return part.replace("AS VARCHAR", "AS STRING")
