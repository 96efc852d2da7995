"""What the warehouse knows about load dates, for the plan and for the landing and apply steps."""

from __future__ import annotations

import datetime as dt

import duckdb

from replay_assets.core.plan import DatePlan
from replay_assets.core.status import PartitionStatus
from replay_assets.storage.db.sql import DuckDBSql
from replay_assets.storage.evidence.written_once import EvidenceWriting


def contiguous_ranges(dates: list[str]) -> list[tuple[str, str]]:
    """Group sorted ISO dates into runs of consecutive days."""
    ranges: list[tuple[str, str]] = []
    for day in dates:
        if ranges and dt.date.fromisoformat(ranges[-1][1]) + dt.timedelta(days=1) == dt.date.fromisoformat(
            day
        ):
            ranges[-1] = (ranges[-1][0], day)
        else:
            ranges.append((day, day))
    return ranges


def record_attempt(
    con: duckdb.DuckDBPyConnection, plan: DatePlan, status: PartitionStatus, reason: str, now: dt.datetime
) -> None:
    # keyed by the file fingerprints: replacing the broken file makes the date ready
    EvidenceWriting(DuckDBSql(con)).insert_attempt(
        plan.load_date, plan.attempt_key, status=status.value, reason=reason, now=now
    )
    EvidenceWriting(DuckDBSql(con)).set_status(
        "current_orders", keys=[plan.load_date], status=status, reason=reason, now=now
    )
