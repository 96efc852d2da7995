"""The apply steps' small records, written once for both engines over the unit's ``Sql``: an
attempt at a load date's input, a load date applied (with its input identity), its batches'
reconciliation, and its certified snapshot record and state sums."""

from __future__ import annotations

import datetime as dt

from replay_assets.core.aggregate import Controls
from replay_assets.core.plan import DatePlan
from replay_assets.core.state import Counts
from replay_assets.core.status import PartitionStatus
from replay_assets.storage.evidence.written_once import EvidenceWriting
from replay_assets.storage.rules.digest import LIMBS, StateDigest
from replay_assets.storage.rules.sql import Sql


def record_attempt(sql: Sql, plan: DatePlan, status: PartitionStatus, reason: str, now: dt.datetime) -> None:
    """An attempt that did not apply the load date, keyed by the file fingerprints (replacing the
    broken file makes the date ready), and the date's status."""
    evidence = EvidenceWriting(sql)
    evidence.insert_attempt(plan.load_date, plan.attempt_key, status=status.value, reason=reason, now=now)
    evidence.set_status("current_orders", keys=[plan.load_date], status=status, reason=reason, now=now)


def record_applied(sql: Sql, day: str, identity: str, now: dt.datetime, run_id: str | None) -> None:
    row = {"load_date": day, "identity": identity, "applied_at": now, "run_id": run_id}
    sql.upsert("load_dates", [row], on=("load_date",))


def write_reconciliation(sql: Sql, plan: DatePlan, counts: dict[str, Counts], status: str) -> None:
    """Each batch of the load date's counts and status, replacing what an earlier application
    recorded."""
    rows = [
        {"batch_id": d.batch_id, "source": d.source, "load_date": plan.load_date}
        | counts[d.batch_id].__dict__
        | {"status": status}
        for d in plan.batches
    ]
    sql.upsert("reconciliation", rows, on=("batch_id",))


SNAPSHOT = (
    "active_lines", "distinct_orders", "units", "amount_minor", "cost_minor", "gross_profit_minor",
    "row_count", "content_sha256",
)  # fmt: skip


def write_snapshot(sql: Sql, day: str, controls: Controls, rows: int, digest: str) -> None:
    """The certified snapshot record of a load date: controls, row count, content hash."""
    values = dict(zip(SNAPSHOT, (*controls.as_tuple(), rows, digest), strict=True))
    sql.upsert("snapshots", [{"load_date": day, **values}], on=("load_date",))


def store_digest(sql: Sql, day: str, digest: StateDigest) -> None:
    """The load date's state sums per entity (what a later date by change builds on)."""
    rows = [
        {"load_date": day, "entity": entity, "rows": sums[0], **{f"s{i}": sums[1 + i] for i in range(LIMBS)}}
        for entity, sums in digest.sums.items()
    ]
    sql.upsert("state_digests", rows, on=("load_date", "entity"))
