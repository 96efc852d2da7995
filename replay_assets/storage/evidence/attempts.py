"""Operational evidence: every step attempt (started, failed, succeeded) and the service levels of
each certified load date, computed from what the warehouse recorded (SPEC 7)."""

from __future__ import annotations

import datetime as dt

import duckdb

from replay_assets.core.config import SloPolicy
from replay_assets.core.manifest import parse_instant
from replay_assets.core.slo import Slo, evaluate
from replay_assets.storage.db.warehouse import one

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


def step_attempts(con: duckdb.DuckDBPyConnection, run_id: str) -> list[tuple[str, str, int, str, str]]:
    """(step, partition, attempt, outcome, detail) of one run, in the order they happened."""
    rows = con.execute(
        """SELECT step, partition_key, attempt, outcome, detail FROM step_attempts WHERE run_id = ?
           ORDER BY recorded_at, attempt, CASE outcome WHEN 'STARTED' THEN 0 ELSE 1 END""",
        [run_id],
    ).fetchall()
    return [(str(a), str(b), int(c), str(d), str(e)) for a, b, c, d, e in rows]


# Batches of the load date that count: every delivery except a blocked one (a blocked batch that
# is still blocked leaves the date unapplied; a corrected re-delivery replaces it). A batch an
# operator skipped counts as declared but not landed: the partition is incomplete by it.
CONTRIBUTING = """
    SELECT max(m.ready_at), coalesce(sum(m.source_events), 0),
           coalesce(sum(m.source_events) FILTER (WHERE r.status <> 'SKIPPED'), 0)
    FROM manifests m JOIN reconciliation r USING (batch_id)
    WHERE m.load_date = ? AND r.status <> 'BLOCKED'"""


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
    ready, declared, landed = one(con, CONTRIBUTING, [load_date]) or (None, 0, 0)
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
