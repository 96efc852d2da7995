"""Evidence on Delta: the Spark unit's share of the evidence port (the same rows as
``storage/evidence/`` in DuckDB)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from replay_assets.core.errors import Violation
from replay_assets.core.status import PartitionStatus
from replay_assets.storage.rules.evidence import Cost, status_values
from replay_assets.storage.rules.tables import LANDED_TABLES
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
        values = status_values(status, reason, now, last_good)
        rows = [{"asset": asset, "partition_key": key, **values} for key in keys]
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
        self.append("costs", [row])

    def landed_batch(self, batch_id: str) -> tuple[str, str] | None:
        """The load date and manifest sha256 a landed batch came with, or None."""
        found = self.rows(self._of_batch("manifests", batch_id).select("load_date", "manifest_sha256"))
        return (str(found[0]["load_date"]), str(found[0]["manifest_sha256"])) if found else None

    def schema_gated(self, batch_id: str) -> int:
        """How many of the batch's events the schema gate refused (an undeclared schema version)."""
        rule = Violation.UNSUPPORTED_SCHEMA_VERSION.value
        return int(self._of_batch("batch_violations", batch_id).where(F.col("rule") == F.lit(rule)).count())

    def violated_on(self, batch_id: str, load_date: str) -> bool:
        found = self._of_batch("batch_violations", batch_id).where(F.col("load_date") == F.lit(load_date))
        return bool(found.limit(1).collect())

    def record_relanding(
        self,
        batch_id: str,
        load_date: str,
        manifest_sha256: str,
        *,
        violations: int,
        note: str,
        operator: str,
        now: dt.datetime,
    ) -> None:
        """Record the relanding, then remove the batch's landed rows (``batches.record_relanding``)."""
        row = {
            "batch_id": batch_id,
            "load_date": load_date,
            "manifest_sha256": manifest_sha256,
            "violations": violations,
            "rejected": int(self._of_batch("rejected_events", batch_id).count()),
            "note": note,
            "operator": operator,
            "relanded_at": now,
        }
        self.append("batch_relandings", [row])
        batch = self.spark.createDataFrame([(batch_id,)], "batch_id string")
        delete = "MERGE INTO {target} t USING {source} s ON t.batch_id = s.batch_id WHEN MATCHED THEN DELETE"
        for table in LANDED_TABLES:
            self.merge_frame(table, batch, delete, matches=("batch_id",))

    def record_skip(self, batch_id: str, *, note: str, operator: str, now: dt.datetime) -> None:
        row = {"batch_id": batch_id, "action": "skip", "note": note, "operator": operator, "resolved_at": now}
        self.merge(
            "batch_resolutions", [row], on=("batch_id",), update=("action", "note", "operator", "resolved_at")
        )
        batch = self.spark.createDataFrame([(batch_id, "SKIPPED")], "batch_id string, status string")
        self.merge_frame(
            "reconciliation",
            batch,
            "MERGE INTO {target} t USING {source} s ON t.batch_id = s.batch_id "
            "WHEN MATCHED THEN UPDATE SET status = s.status",
            matches=("batch_id",),
        )

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
        self.merge("backfills", [row], on=("backfill_id",), update=update)

    def _of_batch(self, table: str, batch_id: str) -> DataFrame:
        return self.frame(table).where(F.col("batch_id") == F.lit(batch_id))
