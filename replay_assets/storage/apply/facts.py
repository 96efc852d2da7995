"""What the warehouse knows about load dates, for the plan and for the landing and apply steps."""

from __future__ import annotations

import datetime as dt

import duckdb

from replay_assets.core.plan import DatePlan, WarehouseFacts
from replay_assets.core.status import DateStatus, PartitionStatus
from replay_assets.storage.apply import certified
from replay_assets.storage.db.warehouse import one
from replay_assets.storage.evidence.attempts import insert_attempt
from replay_assets.storage.evidence.status import set_status
from replay_assets.storage.rules.apply import require_all_landed
from replay_assets.storage.rules.tables import PRUNED_THROUGH

LATEST_ATTEMPTS = """
    SELECT load_date, identity, status, reason FROM load_date_attempts
    QUALIFY row_number() OVER (PARTITION BY load_date, identity ORDER BY attempted_at DESC, seq DESC) = 1"""

# batches an application of their load date counted: a late batch is not, until one counts it
COUNTED = "SELECT batch_id FROM reconciliation WHERE status = 'APPLIED'"


def warehouse_facts(con: duckdb.DuckDBPyConnection) -> WarehouseFacts:
    applied = dict(con.execute("SELECT load_date, identity FROM load_dates").fetchall())
    blocked = {(d, i): (DateStatus(s), r) for d, i, s, r in con.execute(LATEST_ATTEMPTS).fetchall()}
    skipped = frozenset(r[0] for r in con.execute("SELECT batch_id FROM batch_resolutions").fetchall())
    landed = dict(con.execute("SELECT batch_id, manifest_sha256 FROM manifests").fetchall())
    counted = con.execute(COUNTED).fetchall()
    return WarehouseFacts(
        applied,
        blocked,
        skipped=skipped,
        landed=landed,
        pointer=certified.pointer(con) or "",
        pruned_through=pruned_through(con),
        counted=frozenset(r[0] for r in counted),
    )


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
    insert_attempt(con, plan.load_date, plan.attempt_key, status=status.value, reason=reason, now=now)
    set_status(con, "current_orders", keys=[plan.load_date], status=status, reason=reason, now=now)


def require_landed(con: duckdb.DuckDBPyConnection, plan: DatePlan) -> None:
    landed = {
        r[0]
        for r in con.execute(
            "SELECT batch_id FROM manifests WHERE load_date = ?", [plan.load_date]
        ).fetchall()
    }
    require_all_landed(plan, landed)


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


def pruned_through(con: duckdb.DuckDBPyConnection) -> str:
    """The newest pruned load date, or "" when nothing was pruned."""
    row = one(con, "SELECT value FROM pointers WHERE name = ?", [PRUNED_THROUGH])
    return str(row[0]) if row else ""
