"""The gate of a load date on Delta: what this engine does its own way, the row hashing of the
state's multiset hash and the row checks run by one engine task. The sums and controls by change,
the state checks and certification are written once (``rules/digest.py``,
``capabilities/shared.py``), so the two adapters certify alike; the content hash is byte for byte
DuckDB's (each row's JSON rendered as DuckDB's ``to_json`` does, nulls included, which Sail's
``to_json`` drops)."""

from __future__ import annotations

import pickle
from collections.abc import Sequence
from functools import partial

import pyarrow as pa
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema

from replay_assets.core.aggregate import Controls
from replay_assets.storage.apply import reading
from replay_assets.storage.apply.row_checks import RowChecks, check_rows
from replay_assets.storage.capabilities import shared
from replay_assets.storage.rules import by_change
from replay_assets.storage.rules.digest import (
    ENTITIES,
    LIMBS,
    StateDigest,
    base_of,
    change_by,
    controls_of,
    full_by,
)
from replay_assets.storage.spark import row_checks_task, schema
from replay_assets.storage.spark.dialect import over_tables
from replay_assets.storage.spark.row_checks_task import TAG
from replay_assets.storage.spark.unit import On, SparkSql, UnitBase


class SparkGateSteps(On, shared.GateRecords):
    def digest_base(self, before: str | None) -> tuple[StateDigest, Controls]:
        return base_of(before, StoredSums(self.u))

    def digest_change(self, day: str, first: bool = False, *, from_latest: bool = False) -> StateDigest:
        return change_by(partial(_sums, self.u), day, first, from_latest=from_latest)

    def check_written(self, day: str) -> RowChecks:
        """The row-level gate over the rows ``day`` wrote, run by the engine (``engine_row_checks``)."""
        written = {
            e: self.u.sql(over_tables(by_change.written(t)), day=day) for e, (t, _c, _k) in ENTITIES.items()
        }
        return engine_row_checks(written)


class StoredSums(reading.StoredSums):
    """The stored records as ``reading.StoredSums`` reads them, and their recomputation by the engine."""

    def __init__(self, u: UnitBase) -> None:
        super().__init__(SparkSql(u))
        self.u = u

    def full_sums(self, day: str) -> StateDigest:
        return full_by(partial(_sums, self.u), day)

    def recomputed_controls(self, day: str) -> Controls:
        as_of = by_change.as_of("order_history", ENTITIES["orders"][2], "load_date <= $day")
        return Controls(*controls_of(SparkSql(self.u), as_of, day))


# ---------------------------------------------------------------------- row sets and their sums


def _sums(u: UnitBase, rows_sql: str, entity: str, day: str) -> tuple[int, ...]:
    """Row count and the exact sum of each 64-bit limb of each row's sha256 (DuckDB's
    ``to_json`` of the hashed columns, nulls as ``null``) over the rows a shared statement of
    ``rules/by_change.py`` selects for ``day``."""
    table, columns, _key = ENTITIES[entity]
    rows = u.sql(over_tables(rows_sql), day=day)
    hashed = rows.select(F.sha2(_json(columns, schema.schemas()[table]), 256).alias("h"))
    limbs = [_limb(i).alias(f"l{i}") for i in range(LIMBS)]
    totals = hashed.select(limbs).agg(
        F.count(F.lit(1)).alias("n"), *(F.sum(f"l{i}").alias(f"l{i}") for i in range(LIMBS))
    )
    found = totals.collect()[0]
    return (int(found["n"]), *(int(found[f"l{i}"] or 0) for i in range(LIMBS)))


def _json(columns: Sequence[str], types: pa.Schema | None = None) -> Column:
    """Each row as DuckDB's ``to_json`` of a struct of ``columns`` renders it: keys in order, no
    spaces, strings escaped as JSON, nulls as ``null``. With the columns' ``types``, an integer
    is its decimal text and a string Sail's ``to_json`` of it once (the same text, cheaper)."""
    parts: list[Column] = [F.lit("{")]
    for n, column in enumerate(columns):
        kind = types.field(column).type if types is not None else None
        wrapped = f"to_json(named_struct('v', `{column}`))"  # {"v":<value>}
        if kind is not None and pa.types.is_integer(kind):
            value = F.col(column).cast("string")
        elif kind is not None and pa.types.is_string(kind):  # "...", closed by a quote: one brace to drop
            value = F.rtrim(F.substring(F.expr(wrapped), 6, 2**31 - 1), F.lit("}"))
        else:
            value = F.expr(f"substr({wrapped}, 6, length({wrapped}) - 6)")
        parts.append(F.lit(("," if n else "") + f'"{column}":'))
        parts.append(F.when(F.col(column).isNull(), F.lit("null")).otherwise(value))
    parts.append(F.lit("}"))
    return F.concat(*parts)


def _limb(i: int) -> Column:
    """The i-th 64-bit limb of the hex digest ``h`` as an exact decimal, from two 32-bit halves
    (Sail's ``conv`` gives null above 2^63)."""
    high = F.conv(F.substring("h", 1 + 16 * i, 8), 16, 10).cast("decimal(20,0)")
    low = F.conv(F.substring("h", 9 + 16 * i, 8), 16, 10).cast("decimal(20,0)")
    return (high * F.lit(4294967296).cast("decimal(20,0)") + low).cast("decimal(38,0)")


def engine_row_checks(written: dict[str, DataFrame]) -> RowChecks:
    """``row_checks.check_rows`` over the engine's rows of each of ``ENTITIES``, run by one
    engine task (``row_checks_task.py``): only the verdicts come to this process."""
    tables, frames = [], []
    for index, entity in enumerate(ENTITIES):
        _table, columns, key = ENTITIES[entity]
        tables.append((list(columns), list(key)))
        frames.append(written[entity].select(list(columns)).withColumn(TAG, F.lit(index)))
    rows = frames[0].unionByName(frames[1], allowMissingColumns=True)
    task = partial(row_checks_task.check_written, tables)
    found = rows.repartition(1).mapInArrow(task, from_arrow_schema(row_checks_task.OUT)).toArrow()
    if not found.num_rows:  # no row at all: the engine may run no task
        return check_rows([], [])
    verdicts: RowChecks = pickle.loads(found.column("verdicts")[0].as_py())
    return verdicts
