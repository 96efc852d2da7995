"""The evidence port written once for both engines, over the unit's ``Sql``: costs, step
attempts, load-date attempts, partition statuses, service levels, sensor cursors and backfill
notes. ``detail`` and ``reason`` are codes and fixed texts, never a row value."""

from __future__ import annotations

import datetime as dt
from collections.abc import Collection, Iterable

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
from replay_assets.storage.rules.sql import Sql
from replay_assets.storage.rules.tables import LANDED_TABLES

STARTED, FAILED, SUCCEEDED = "STARTED", "FAILED", "SUCCEEDED"

RUN_COSTS = """
SELECT count(*) AS cost_records, coalesce(sum(events), 0) AS events,
       coalesce(sum(bytes_read), 0) AS bytes_read,
       round(coalesce(sum(cpu_seconds), 0), 3) AS cpu_seconds,
       round(coalesce(sum(wall_seconds), 0), 3) AS wall_seconds,
       coalesce(sum(rows_written), 0) AS rows_written, coalesce(sum(candidate_bytes), 0) AS candidate_bytes
FROM costs WHERE run_id = $run_id AND step = $step"""
STEP_ATTEMPTS = """
SELECT step, partition_key, attempt, outcome, detail FROM step_attempts WHERE run_id = $run_id
ORDER BY recorded_at, attempt, CASE WHEN outcome = 'STARTED' THEN 0 ELSE 1 END"""
# a load date's service levels are those of its first certification: a later repair or
# restatement is reported by the partition's status, not as a late load
FIRST_CERTIFICATION = """
SELECT certified_at, run_id FROM publications WHERE asset = 'current_orders' AND partition_key = $day
ORDER BY version LIMIT 1"""
RUN_STARTED = "SELECT min(recorded_at) AS started FROM step_attempts WHERE run_id = $run_id"
NEXT_ATTEMPT = "SELECT coalesce(max(seq), 0) + 1 AS seq FROM load_date_attempts"
SENSOR_CURSOR = "SELECT s.cursor AS saved FROM sensor_cursors s WHERE s.name = $sensor"


class EvidenceReading:
    def __init__(self, sql: Sql) -> None:
        self.sql = sql

    def run_costs(self, run_id: str, step: str) -> dict[str, float]:
        """Totals of one step of one run."""
        [row] = self.sql.rows(RUN_COSTS, run_id=run_id, step=step)
        return {name: float(value) for name, value in row.items()}

    def step_attempts(self, run_id: str) -> list[tuple[str, str, int, str, str]]:
        """(step, partition, attempt, outcome, detail) of one run, in the order they happened."""
        return [
            (str(r["step"]), str(r["partition_key"]), int(r["attempt"]), str(r["outcome"]), str(r["detail"]))
            for r in self.sql.rows(STEP_ATTEMPTS, run_id=run_id)
        ]

    def slo_for(self, load_date: str, policy: SloPolicy) -> Slo | None:
        """The service levels of the load date's delivery; None while it is uncertified."""
        published = self.sql.rows(FIRST_CERTIFICATION, day=load_date)
        inputs = self.sql.rows(CONTRIBUTING, day=load_date) if published else []
        if not inputs or inputs[0]["ready_at"] is None:
            return None
        [started] = self.sql.rows(RUN_STARTED, run_id=published[0]["run_id"])
        return evaluate(
            policy,
            load_date,
            certified_at=published[0]["certified_at"],
            ready_at=parse_instant(str(inputs[0]["ready_at"]), "ready_at"),
            run_started_at=started["started"],
            declared_events=int(inputs[0]["declared"]),
            landed_events=int(inputs[0]["landed"]),
        )

    def daily_slos(
        self, policy: SloPolicy, business_dates: list[str] | None = None
    ) -> dict[str, tuple[Slo, str]]:
        """Per certified business date of daily_aggregates (every one, or those of
        ``business_dates``): its service levels and the load date that last fed it. A date whose
        newest input is still queued has none yet (its status says PENDING_RESTATEMENT)."""
        out = {}
        for r in self.sql.rows(DAILY_SLOS, **days_parameters(business_dates)):
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
        found = self.sql.rows(SENSOR_CURSOR, sensor=sensor)
        return str(found[0]["saved"]) if found else None


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
        self.sql.insert("costs", [row])

    def insert_attempt(
        self, load_date: str, identity: str, *, status: str, reason: str, now: dt.datetime
    ) -> None:
        """One attempt at a load date's input (``identity``): the newest attempt of an input is
        what the plan sees; ``seq`` orders attempts at one instant (the next number, inside the
        unit's transaction)."""
        [seq] = self.sql.rows(NEXT_ATTEMPT)
        row = {"load_date": load_date, "identity": identity, "status": status, "reason": reason}
        self.sql.insert("load_date_attempts", [{**row, "attempted_at": now, "seq": seq["seq"]}])

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
        row = {"run_id": run_id, "step": step, "partition_key": partition_key, "attempt": attempt}
        self.sql.insert("step_attempts", [{**row, "outcome": outcome, "detail": detail, "recorded_at": now}])

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
        """Upsert the status of partitions (one write for every key: a load date marks up to
        every business date it touched); the last good version is kept unless a new one is given."""
        values = status_values(status, reason, now, last_good)
        upsert_statuses(
            self.sql, [{"asset": asset, "partition_key": key, **values} for key in sorted(set(keys))]
        )

    def save_sensor_cursor(self, sensor: str, cursor: str) -> None:
        self.sql.upsert("sensor_cursors", [{"name": sensor, "cursor": cursor}], on=("name",))

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
        row = {"backfill_id": backfill_id, "asset": asset, "from_partition": first, "to_partition": last}
        extra = {"lane": "backfill", "note": note, "operator": operator, "created_at": now}
        self.sql.upsert("backfills", [{**row, **extra}], on=("backfill_id",))


def upsert_statuses(sql: Sql, rows: list[dict[str, object]]) -> None:
    """Partitions' status rows (``status_values``) in one upsert; a row without a last good
    version keeps the one recorded."""
    sql.upsert(
        "partition_status",
        rows,
        on=("asset", "partition_key"),
        keep=("last_good_version", "last_good_sha256"),
    )


def record_skip(sql: Sql, batch_id: str, *, note: str, operator: str, now: dt.datetime) -> None:
    """An operator's skip of a batch: its resolution, and its reconciliation marked SKIPPED."""
    row = {"batch_id": batch_id, "action": "skip", "note": note, "operator": operator, "resolved_at": now}
    sql.upsert("batch_resolutions", [row], on=("batch_id",))
    counted = sql.rows("SELECT * FROM reconciliation WHERE batch_id = $batch", batch=batch_id)
    sql.upsert("reconciliation", [{**r, "status": "SKIPPED"} for r in counted], on=("batch_id",))


def record_relanding(
    sql: Sql,
    batch_id: str,
    load_date: str,
    manifest_sha256: str,
    *,
    violations: int,
    note: str,
    operator: str,
    now: dt.datetime,
    apart: Collection[str] = (),
) -> None:
    """Record the relanding (with the schema-gate ``violations`` and the rejections it undoes),
    then remove the batch's landed rows so the next run lands the same files again; the tables
    of ``apart`` are left to the caller, which removes their rows its own way."""
    rejected = sql.rows("SELECT count(*) AS n FROM rejected_events WHERE batch_id = $batch", batch=batch_id)
    row = {
        "batch_id": batch_id,
        "load_date": load_date,
        "manifest_sha256": manifest_sha256,
        "violations": violations,
        "rejected": int(rejected[0]["n"]) if rejected else 0,
        "note": note,
        "operator": operator,
        "relanded_at": now,
    }
    sql.insert("batch_relandings", [row])
    for table in LANDED_TABLES:
        if table not in apart:
            sql.delete(table, "SELECT $batch AS batch_id", on=("batch_id",), batch=batch_id)
