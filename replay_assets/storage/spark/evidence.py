"""Evidence on Delta: the Spark unit's share of ``EvidenceUnit`` (the same rows as
``storage/evidence/`` in DuckDB)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable

from pyspark.sql import functions as F

from replay_assets.core.status import PartitionStatus
from replay_assets.storage.spark.unit import UnitBase


class EvidenceOps(UnitBase):
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
        rows = [
            {
                "asset": asset,
                "partition_key": key,
                "status": status.value,
                "reason": reason,
                "last_good_version": last_good[0] if last_good else None,
                "last_good_sha256": last_good[1] if last_good else None,
                "updated_at": now,
            }
            for key in keys
        ]
        if rows:
            self.merge(
                "partition_status",
                rows,
                on=("asset", "partition_key"),
                update=("status", "reason", "updated_at"),
                keep=("last_good_version", "last_good_sha256"),
            )

    def sensor_cursor(self, sensor: str) -> str | None:
        rows = self.rows(self.frame("sensor_cursors").where(F.col("name") == F.lit(sensor)).select("cursor"))
        return str(rows[0]["cursor"]) if rows else None

    def save_sensor_cursor(self, sensor: str, cursor: str) -> None:
        self.merge("sensor_cursors", [{"name": sensor, "cursor": cursor}], on=("name",), update=("cursor",))

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
        self.append("step_attempts", [row])

    def insert_attempt(
        self, load_date: str, identity: str, *, status: str, reason: str, now: dt.datetime
    ) -> None:
        """One attempt at a load date's input; ``seq`` orders attempts at one instant (DuckDB's
        sequence: here the next number after the newest, inside the unit's transaction)."""
        newest = self.frame("load_date_attempts").agg(F.max("seq").alias("s")).collect()
        seq = int(newest[0]["s"] or 0) + 1 if newest else 1
        row = {
            "load_date": load_date,
            "identity": identity,
            "status": status,
            "reason": reason,
            "attempted_at": now,
            "seq": seq,
        }
        self.append("load_date_attempts", [row])

    def step_attempts(self, run_id: str) -> list[tuple[str, str, int, str, str]]:
        """(step, partition, attempt, outcome, detail) of one run, in the order they happened."""
        started_first = F.when(F.col("outcome") == F.lit("STARTED"), 0).otherwise(1)
        found = self.frame("step_attempts").where(F.col("run_id") == F.lit(run_id))
        ordered = found.orderBy("recorded_at", "attempt", started_first)
        rows = self.rows(ordered.select(["step", "partition_key", "attempt", "outcome", "detail"]))
        return [
            (str(r["step"]), str(r["partition_key"]), int(r["attempt"]), str(r["outcome"]), str(r["detail"]))
            for r in rows
        ]
