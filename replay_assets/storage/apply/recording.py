"""The apply steps' small records, written once for both engines over the unit's ``Sql``: a load
date applied (with its input identity) and its batches' reconciliation."""

from __future__ import annotations

import datetime as dt

from replay_assets.core.plan import DatePlan
from replay_assets.core.state import Counts
from replay_assets.storage.rules.sql import Sql


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
