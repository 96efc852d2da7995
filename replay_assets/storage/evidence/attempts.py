"""Operational evidence: every step attempt (started, failed, succeeded) and the service levels of
each certified load date, computed from what the warehouse recorded."""

from __future__ import annotations

import datetime as dt

import duckdb

from replay_assets.core.config import SloPolicy
from replay_assets.core.manifest import parse_instant
from replay_assets.core.slo import Slo, evaluate
from replay_assets.storage.db.warehouse import one
from replay_assets.storage.rules.evidence import CONTRIBUTING, DAILY_SLOS, days_parameters

STARTED, FAILED, SUCCEEDED = "STARTED", "FAILED", "SUCCEEDED"


def record_step_attempt(
    con: duckdb.DuckDBPyConnection,
    run_id: str,
    step: str,
    partition_key: str,
    attempt: int,
    outcome: str,
    detail: str,
    now: dt.datetime,
) -> None:
    """``detail`` is an error code or class name, never a row value."""
    con.execute(
        "INSERT INTO step_attempts ("
        "run_id, step, partition_key, attempt, outcome, detail, recorded_at"
        ") VALUES (?, ?, ?, ?, ?, ?, ?)",
        [run_id, step, partition_key, attempt, outcome, detail, now],
    )


def insert_attempt(
    con: duckdb.DuckDBPyConnection,
    load_date: str,
    identity: str,
    *,
    status: str,
    reason: str,
    now: dt.datetime,
) -> None:
    """One attempt at a load date's input (``identity``): the newest attempt of an input is what
    the plan sees (``load_date_attempts.seq`` orders attempts at one instant)."""
    con.execute(
        "INSERT INTO load_date_attempts (load_date, identity, status, reason, attempted_at) "
        "VALUES (?, ?, ?, ?, ?)",
        [load_date, identity, status, reason, now],
    )


def step_attempts(con: duckdb.DuckDBPyConnection, run_id: str) -> list[tuple[str, str, int, str, str]]:
    """(step, partition, attempt, outcome, detail) of one run, in the order they happened."""
    rows = con.execute(
        """SELECT step, partition_key, attempt, outcome, detail FROM step_attempts WHERE run_id = ?
           ORDER BY recorded_at, attempt, CASE outcome WHEN 'STARTED' THEN 0 ELSE 1 END""",
        [run_id],
    ).fetchall()
    return [(str(a), str(b), int(c), str(d), str(e)) for a, b, c, d, e in rows]


def daily_slos(
    con: duckdb.DuckDBPyConnection, policy: SloPolicy, business_dates: list[str] | None = None
) -> dict[str, tuple[Slo, str]]:
    """Per certified business date of daily_aggregates (every one, or those of
    ``business_dates``): its service levels and the load date that last fed it. A date whose
    newest input is still queued has none yet (its status says PENDING_RESTATEMENT)."""
    out = {}
    for day, fed_by, certified_at, ready, declared, landed, started in con.execute(
        DAILY_SLOS, days_parameters(business_dates)
    ).fetchall():
        out[str(day)] = (
            evaluate(
                policy,
                str(fed_by),
                certified_at=certified_at,
                ready_at=parse_instant(str(ready), "ready_at"),
                run_started_at=started,
                declared_events=int(declared),
                landed_events=int(landed),
            ),
            str(fed_by),
        )
    return out


def slo_for(con: duckdb.DuckDBPyConnection, load_date: str, policy: SloPolicy) -> Slo | None:
    """The service levels of the load date's delivery: its first certification (a later repair or
    restatement is reported by the partition's status, not as a late load). None if uncertified."""
    published = one(
        con,
        """SELECT certified_at, run_id FROM publications WHERE asset = 'current_orders'
           AND partition_key = ? ORDER BY version LIMIT 1""",
        [load_date],
    )
    if published is None:
        return None
    certified_at, run_id = published
    ready, declared, landed = one(con, CONTRIBUTING, {"day": load_date}) or (None, 0, 0)
    if ready is None:
        return None
    started = one(con, "SELECT min(recorded_at) FROM step_attempts WHERE run_id = ?", [run_id])
    return evaluate(
        policy,
        load_date,
        certified_at=certified_at,
        ready_at=parse_instant(str(ready), "ready_at"),
        run_started_at=started[0] if started and started[0] is not None else None,
        declared_events=int(declared),
        landed_events=int(landed),
    )
