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


def applied_identity(con: duckdb.DuckDBPyConnection, day: str) -> str | None:
    """The input identity ``day`` was applied with; None when it is not applied."""
    row = con.execute("SELECT identity FROM load_dates WHERE load_date = ?", [day]).fetchone()
    return str(row[0]) if row else None


def newest_applied(con: duckdb.DuckDBPyConnection) -> str | None:
    row = con.execute("SELECT max(load_date) FROM load_dates").fetchone()
    return str(row[0]) if row and row[0] is not None else None


def record_applied(
    con: duckdb.DuckDBPyConnection, day: str, identity: str, now: dt.datetime, run_id: str | None
) -> None:
    con.execute(
        "INSERT OR REPLACE INTO load_dates (load_date, identity, applied_at, run_id) VALUES (?, ?, ?, ?)",
        [day, identity, now, run_id],
    )


def first_applied(con: duckdb.DuckDBPyConnection) -> str | None:
    row = con.execute("SELECT min(load_date) FROM load_dates").fetchone()
    return str(row[0]) if row and row[0] is not None else None
