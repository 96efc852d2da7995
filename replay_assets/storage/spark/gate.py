"""The gate of a load date on Delta, by change (the DuckDB adapter's ``state_digest.py``,
``row_checks.py`` and ``certify.py``; their docstrings state the rules): the state's multiset
hash and controls from what the date wrote and replaced, the row checks over the rows it wrote,
and certification. The decisions are the engine-neutral ones (``rules/digest.py``: ``base_of`` and
``combine_by_change``, ``row_checks.check_rows``, ``publish/verdicts.py``), so the two
adapters certify alike; the content hash is byte for byte DuckDB's (each row's JSON rendered as
DuckDB's ``to_json`` does, nulls included, which Sail's ``to_json`` drops)."""

from __future__ import annotations

import datetime as dt
import pickle
from collections.abc import Sequence
from functools import partial

import pyarrow as pa
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema

from replay_assets.core.aggregate import Controls
from replay_assets.core.gate import CheckOutcome
from replay_assets.core.state import Counts
from replay_assets.storage.apply.row_checks import RowChecks, Snapshot, check_rows
from replay_assets.storage.publish import verdicts
from replay_assets.storage.rules.digest import (
    ENTITIES,
    LIMBS,
    StateDigest,
    base_of,
    combine_by_change,
    target_digest_of,
)
from replay_assets.storage.spark import row_checks_task, schema
from replay_assets.storage.spark.facts import POINTER
from replay_assets.storage.spark.frames import newest_per_key
from replay_assets.storage.spark.row_checks_task import TAG
from replay_assets.storage.spark.stepbase import StepBase

_SNAPSHOT = (
    "active_lines", "distinct_orders", "units", "amount_minor", "cost_minor", "gross_profit_minor",
    "row_count", "content_sha256",
)  # fmt: skip
_ACTIVE = F.col("status") == F.lit("active")


class GateSteps(StepBase):
    # ------------------------------------------------------------------ the base a date builds on

    def previous_date(self, day: str) -> str | None:
        found = (
            self._table("load_dates")
            .where(F.col("load_date") < F.lit(day))
            .agg(F.max("load_date").alias("d"))
        )
        value = found.collect()[0]["d"]
        return str(value) if value is not None else None

    def digest_base(self, before: str | None) -> tuple[StateDigest, Controls]:
        return base_of(before, self)

    def stored_sums(self, day: str) -> StateDigest | None:
        rows = self.unit.rows(self._table("state_digests").where(F.col("load_date") == F.lit(day)))
        sums = {str(r["entity"]): (int(r["rows"]), *(int(r[f"s{i}"]) for i in range(LIMBS))) for r in rows}
        return StateDigest(sums) if set(sums) == set(ENTITIES) else None

    def stored_controls(self, day: str) -> Controls | None:
        rows = self.unit.rows(self._table("snapshots").where(F.col("load_date") == F.lit(day)))
        return Controls(*(int(rows[0][c]) for c in _SNAPSHOT[:6])) if rows else None

    def intact(self, day: str, sums: StateDigest) -> bool:
        snapshot = self.unit.rows(self._table("snapshots").where(F.col("load_date") == F.lit(day)))
        recorded = self._table("operations").where(
            F.col("kind").isin("apply_load_date", "repair_apply_load_date")
            & (F.col("partition_key") == F.lit(day))
            & (F.col("state") == F.lit("COMPLETE"))
        )
        newest = self.unit.rows(recorded.orderBy(F.col("updated_at").desc()).limit(1))
        return (
            bool(snapshot)
            and snapshot[0]["content_sha256"] == sums.content_sha256
            and bool(newest)
            and newest[0]["target_sha256"] == self.target_digest(day, sums.content_sha256)
        )

    def full_sums(self, day: str) -> StateDigest:
        return StateDigest({e: self._sums(self._as_of(e, day), e) for e in ENTITIES})

    def recomputed_controls(self, day: str) -> Controls:
        return Controls(*self._controls_of(self._as_of("orders", day)))

    # ------------------------------------------------------------------ what the date changed

    def digest_change(self, day: str, first: bool = False, *, from_latest: bool = False) -> StateDigest:
        written = StateDigest({e: self._sums(self._written(e, day), e) for e in ENTITIES})
        if first:
            return written
        replaced = StateDigest({e: self._sums(self._replaced(e, day, from_latest), e) for e in ENTITIES})
        return written.plus(replaced, sign=-1)

    def controls_by_change(
        self, day: str, base: Controls, first: bool = False, *, from_latest: bool = False
    ) -> tuple[Controls, Controls]:
        nothing: tuple[int, ...] = (0,) * 6
        written = self._controls_of(self._written("orders", day))
        if first:
            after, before, replaced = written, nothing, nothing
        else:
            touched = self._written("orders", day).select("order_id").distinct()
            if from_latest:
                prior = self._table("order_latest").join(touched, "order_id", "left_semi")
                keys = self._written("orders", day).select("order_id", "line_no")
                kept = prior.join(keys, ["order_id", "line_no"], "left_anti")
                later = kept.unionByName(self._written("orders", day))
            else:
                prior = self._newest_rows("orders", day, inclusive=False, within=touched)
                later = self._newest_rows("orders", day, inclusive=True, within=touched)
            after, before = self._controls_of(later), self._controls_of(prior)
            replaced = self._controls_of(self._replaced("orders", day, from_latest))
        return combine_by_change(base, written=written, replaced=replaced, after=after, before=before)

    def check_written(self, day: str) -> RowChecks:
        return checked_in_engine(self, day)

    # ------------------------------------------------------------------ certification

    def state_checks(
        self, day: str, snapshot: Snapshot, counts: dict[str, Counts], first: str, recomputed: Controls
    ) -> Sequence[CheckOutcome]:
        certified = self.certified_load_dates()
        return verdicts.state_checks(
            day, snapshot, counts, first=first, recomputed=recomputed, certified=certified
        )

    def certify_state(
        self,
        day: str,
        digest: str,
        outcomes: Sequence[CheckOutcome],
        run_id: str | None,
        now: dt.datetime,
        repair_reason: str | None = None,
    ) -> None:
        """Publish the load date's snapshot and move the consumer pointer to it (never backwards)."""
        self.record_publication(
            "current_orders",
            day,
            as_of=day,
            digest=digest,
            outcomes=outcomes,
            run_id=run_id,
            now=now,
            repair_reason=repair_reason,
        )
        pointer = self.certified_pointer()
        if pointer is None or pointer < day:
            self.unit.merge("pointers", [{"name": POINTER, "value": day}], on=("name",), update=("value",))

    def certified_pointer(self) -> str | None:
        return self.unit.certified_pointer()

    def record_publication(
        self,
        asset: str,
        key: str,
        as_of: str,
        digest: str,
        outcomes: Sequence[CheckOutcome],
        run_id: str | None,
        now: dt.datetime,
        repair_reason: str | None = None,
    ) -> int | None:
        """A new version when ``verdicts.publishing`` says so, with the partition's status."""
        decided = verdicts.publishing(self.last_publication(asset, key), as_of, digest, repair_reason)
        if decided.version is None:
            self.unit.set_status(asset, keys=[key], status=decided.status, reason=decided.reason, now=now)
            return None
        row = {
            "asset": asset,
            "partition_key": key,
            "version": decided.version,
            "as_of_load_date": as_of,
            "content_sha256": digest,
            "checks": verdicts.checks_json(outcomes),
            "certified_at": now,
            "run_id": run_id,
            "reason": decided.reason,
        }
        self.unit.append("publications", [row])
        last_good = (decided.version, digest)
        self.unit.set_status(
            asset, keys=[key], status=decided.status, reason=decided.reason, now=now, last_good=last_good
        )
        return decided.version

    def certified_load_dates(self) -> set[str]:
        return set(self.unit.published_partitions("current_orders"))

    def last_publication(self, asset: str, key: str) -> tuple[int, str, str] | None:
        return self.unit.last_publication(asset, key)

    def write_snapshot(self, day: str, controls: Controls, rows: int, digest: str) -> None:
        row = {"load_date": day, **dict(zip(_SNAPSHOT, (*controls.as_tuple(), rows, digest), strict=True))}
        self.unit.merge("snapshots", [row], on=("load_date",), update=_SNAPSHOT)

    def store_digest(self, day: str, digest: StateDigest) -> None:
        rows = [
            {
                "load_date": day,
                "entity": entity,
                "rows": sums[0],
                **{f"s{i}": sums[1 + i] for i in range(LIMBS)},
            }
            for entity, sums in digest.sums.items()
        ]
        update = ("rows", *(f"s{i}" for i in range(LIMBS)))
        self.unit.merge("state_digests", rows, on=("load_date", "entity"), update=update)

    def target_digest(self, day: str, state_sha256: str) -> str:
        snapshot = self.unit.rows(self._table("snapshots").where(F.col("load_date") == F.lit(day)))
        values = [snapshot[0][c] for c in _SNAPSHOT] if snapshot else None
        publication = self.last_publication("current_orders", day)
        return target_digest_of(state_sha256, values, publication[1] if publication else None)

    # ------------------------------------------------------------------ row sets and their sums

    def _written(self, entity: str, day: str) -> DataFrame:
        return self._table(ENTITIES[entity][0]).where(F.col("load_date") == F.lit(day))

    def _replaced(self, entity: str, day: str, from_latest: bool) -> DataFrame:
        """The rows the keys ``day`` wrote had before it (``state_digest._replaced``)."""
        _table, _columns, key = ENTITIES[entity]
        keys = self._written(entity, day).select(list(key)).distinct()
        if from_latest:
            latest = "order_latest" if entity == "orders" else "customer_latest"
            return self._table(latest).join(keys, list(key), "left_semi")
        return self._newest_rows(entity, day, inclusive=False, within=keys)

    def _newest_rows(self, entity: str, day: str, *, inclusive: bool, within: DataFrame) -> DataFrame:
        """Each key's newest row before ``day`` (or as of it), among the keys of ``within``'s
        columns (the orders when ``within`` names only ``order_id``)."""
        table, _columns, key = ENTITIES[entity]
        when = F.col("load_date") <= F.lit(day) if inclusive else F.col("load_date") < F.lit(day)
        rows = self._table(table).where(when).join(within, within.columns, "left_semi")
        return newest_per_key(rows, key)

    def _as_of(self, entity: str, day: str) -> DataFrame:
        table, _columns, key = ENTITIES[entity]
        return newest_per_key(self._table(table).where(F.col("load_date") <= F.lit(day)), key)

    def _sums(self, rows: DataFrame, entity: str) -> tuple[int, ...]:
        """Row count and the exact sum of each 64-bit limb of each row's sha256 (DuckDB's
        ``to_json`` of the hashed columns, nulls as ``null``)."""
        table, columns, _key = ENTITIES[entity]
        hashed = rows.select(F.sha2(_json(columns, schema.schemas()[table]), 256).alias("h"))
        limbs = [_limb(i).alias(f"l{i}") for i in range(LIMBS)]
        totals = hashed.select(limbs).agg(
            F.count(F.lit(1)).alias("n"), *(F.sum(f"l{i}").alias(f"l{i}") for i in range(LIMBS))
        )
        found = totals.collect()[0]
        return (int(found["n"]), *(int(found[f"l{i}"] or 0) for i in range(LIMBS)))

    def _controls_of(self, rows: DataFrame) -> tuple[int, ...]:
        """Active lines, distinct orders with an active line, units, amount, cost, profit."""
        active = rows.where(_ACTIVE)
        sums = [
            F.count(F.lit(1)).alias("lines"),
            F.countDistinct("order_id").alias("orders"),
            F.coalesce(F.sum("quantity"), F.lit(0)).alias("units"),
            F.coalesce(F.sum("amount_minor"), F.lit(0)).alias("amount"),
            F.coalesce(F.sum("cost_minor"), F.lit(0)).alias("cost"),
            F.coalesce(F.sum(F.col("amount_minor") - F.col("cost_minor")), F.lit(0)).alias("profit"),
        ]
        found = active.agg(*sums).collect()[0]
        lines, orders = int(found["lines"]), int(found["orders"])
        return (
            lines,
            orders,
            int(found["units"]),
            int(found["amount"]),
            int(found["cost"]),
            int(found["profit"]),
        )


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


def checked_in_engine(steps: GateSteps, day: str) -> RowChecks:
    """The row-level gate over the rows ``day`` wrote, run by the engine (``engine_row_checks``)."""
    return engine_row_checks({entity: steps._written(entity, day) for entity in ENTITIES})


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
