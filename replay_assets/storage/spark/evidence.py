"""Evidence on Delta: the Spark unit's evidence port (the same rows as ``storage/evidence/`` in
DuckDB); costs and service levels by the shared statements of ``rules/evidence.py``."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable

from pyspark.sql import functions as F

from replay_assets.core.config import SloPolicy
from replay_assets.core.manifest import parse_instant
from replay_assets.core.slo import Slo, evaluate
from replay_assets.core.status import PartitionStatus
from replay_assets.storage.rules.evidence import (
    CONTRIBUTING,
    DAILY_SLOS,
    Cost,
    days_parameters,
    status_values,
)
from replay_assets.storage.spark.dialect import over_tables
from replay_assets.storage.spark.unit import On, UnitBase


class EvidenceReading(On):
    def run_costs(self, run_id: str, step: str) -> dict[str, float]:
        """Totals of one step of one run (``costs.run_costs``)."""
        found = self.u.frame("costs").where(
            (F.col("run_id") == F.lit(run_id)) & (F.col("step") == F.lit(step))
        )
        row = found.agg(
            F.count(F.lit(1)).alias("cost_records"),
            *(F.coalesce(F.sum(c), F.lit(0)).alias(c) for c in ("events", "bytes_read")),
            *(F.round(F.coalesce(F.sum(c), F.lit(0.0)), 3).alias(c) for c in ("cpu_seconds", "wall_seconds")),
            *(F.coalesce(F.sum(c), F.lit(0)).alias(c) for c in ("rows_written", "candidate_bytes")),
        ).collect()[0]
        return {name: float(value) for name, value in row.asDict().items()}

    def step_attempts(self, run_id: str) -> list[tuple[str, str, int, str, str]]:
        """(step, partition, attempt, outcome, detail) of one run, in the order they happened."""
        started_first = F.when(F.col("outcome") == F.lit("STARTED"), 0).otherwise(1)
        found = self.u.frame("step_attempts").where(F.col("run_id") == F.lit(run_id))
        ordered = found.orderBy("recorded_at", "attempt", started_first)
        rows = self.u.rows(ordered.select(["step", "partition_key", "attempt", "outcome", "detail"]))
        return [
            (str(r["step"]), str(r["partition_key"]), int(r["attempt"]), str(r["outcome"]), str(r["detail"]))
            for r in rows
        ]

    def slo_for(self, load_date: str, policy: SloPolicy) -> Slo | None:
        """The service levels of the load date's delivery: its first certification."""
        first = self.u.frame("publications").where(
            (F.col("asset") == F.lit("current_orders")) & (F.col("partition_key") == F.lit(load_date))
        )
        published = self.u.rows(first.orderBy("version").limit(1))
        if not published:
            return None
        inputs = self.u.rows(self.u.sql(over_tables(CONTRIBUTING), day=load_date))[0]
        if inputs["ready_at"] is None:
            return None
        attempts = self.u.frame("step_attempts").where(F.col("run_id") == F.lit(published[0]["run_id"]))
        started = self.u.rows(attempts.agg(F.min("recorded_at").alias("s")))[0]["s"]
        return evaluate(
            policy,
            load_date,
            certified_at=published[0]["certified_at"],
            ready_at=parse_instant(str(inputs["ready_at"]), "ready_at"),
            run_started_at=started,
            declared_events=int(inputs["declared"]),
            landed_events=int(inputs["landed"]),
        )

    def daily_slos(
        self, policy: SloPolicy, business_dates: list[str] | None = None
    ) -> dict[str, tuple[Slo, str]]:
        """Per certified business date: its service levels and the load date that last fed it."""
        out = {}
        found = self.u.sql(over_tables(DAILY_SLOS), **days_parameters(business_dates))
        for r in self.u.rows(found):
            slo = evaluate(
                policy,
                str(r["load_date"]),
                certified_at=r["certified_at"],
                ready_at=parse_instant(str(r["ready_at"]), "ready_at"),
                run_started_at=r["started"],
                declared_events=int(r["declared"]),
                landed_events=int(r["landed"]),
            )
            out[str(r["business_date"])] = (slo, str(r["load_date"]))
        return out

    def sensor_cursor(self, sensor: str) -> str | None:
        rows = self.u.rows(
            self.u.frame("sensor_cursors").where(F.col("name") == F.lit(sensor)).select("cursor")
        )
        return str(rows[0]["cursor"]) if rows else None


class EvidenceWriting(EvidenceReading):
    def record_cost(
        self,
        *,
        run_id: str | None,
        step: str,
        partition_key: str,
        cost: Cost,
        now: dt.datetime,
        batch_id: str | None = None,
        events: int = 0,
        bytes_read: int = 0,
        rows_written: int = 0,
        candidate_bytes: int = 0,
    ) -> None:
        row = {
            "run_id": run_id,
            "step": step,
            "partition_key": partition_key,
            "batch_id": batch_id,
            "events": events,
            "bytes_read": bytes_read,
            "cpu_seconds": round(cost.cpu_seconds, 6),
            "wall_seconds": round(cost.wall_seconds, 6),
            "rows_written": rows_written,
            "candidate_bytes": candidate_bytes,
            "recorded_at": now,
        }
        self.u.append("costs", [row])

    def insert_attempt(
        self, load_date: str, identity: str, *, status: str, reason: str, now: dt.datetime
    ) -> None:
        """One attempt at a load date's input; ``seq`` orders attempts at one instant (DuckDB's
        sequence: here the next number after the newest, inside the unit's transaction)."""
        newest = self.u.frame("load_date_attempts").agg(F.max("seq").alias("s")).collect()
        seq = int(newest[0]["s"] or 0) + 1 if newest else 1
        row = {
            "load_date": load_date,
            "identity": identity,
            "status": status,
            "reason": reason,
            "attempted_at": now,
            "seq": seq,
        }
        self.u.append("load_date_attempts", [row])

    def record_step_attempt(
        self,
        run_id: str,
        *,
        step: str,
        partition_key: str,
        attempt: int,
        outcome: str,
        detail: str,
        now: dt.datetime,
    ) -> None:
        """``detail`` is an error code or class name, never a row value."""
        row = {
            "run_id": run_id,
            "step": step,
            "partition_key": partition_key,
            "attempt": attempt,
            "outcome": outcome,
            "detail": detail,
            "recorded_at": now,
        }
        self.u.append("step_attempts", [row])

    def set_status(
        self,
        asset: str,
        *,
        keys: Iterable[str],
        status: PartitionStatus,
        reason: str,
        now: dt.datetime,
        last_good: tuple[int, str] | None = None,
    ) -> None:
        """Upsert the status of partitions; the last good version is kept unless a new one is given."""
        values = status_values(status, reason, now, last_good)
        upsert_status(self.u, [{"asset": asset, "partition_key": key, **values} for key in keys])

    def save_sensor_cursor(self, sensor: str, cursor: str) -> None:
        self.u.merge("sensor_cursors", [{"name": sensor, "cursor": cursor}], on=("name",), update=("cursor",))

    def record_backfill(
        self,
        backfill_id: str,
        *,
        asset: str,
        first: str,
        last: str,
        note: str,
        operator: str,
        now: dt.datetime,
    ) -> None:
        row = {
            "backfill_id": backfill_id,
            "asset": asset,
            "from_partition": first,
            "to_partition": last,
            "lane": "backfill",
            "note": note,
            "operator": operator,
            "created_at": now,
        }
        update = ("asset", "from_partition", "to_partition", "lane", "note", "operator", "created_at")
        self.u.merge("backfills", [row], on=("backfill_id",), update=update)


def upsert_status(u: UnitBase, rows: list[dict[str, object]]) -> None:
    """Upsert partitions' status rows (``status_values``): a row without a last good version keeps
    the one recorded."""
    if rows:
        keep = ("last_good_version", "last_good_sha256")
        u.merge(
            "partition_status",
            rows,
            on=("asset", "partition_key"),
            update=("status", "reason", "updated_at"),
            keep=keep,
        )
