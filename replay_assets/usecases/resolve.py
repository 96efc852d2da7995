"""An operator's decision on a batch that blocks its load date, audited with who and why.

- ``skip``: the date applies without the batch. A batch that blocks nothing is refused: skipping
  a healthy batch would apply its load date without its events.
- ``reland``: a batch the schema gate blocked is landed again under the current settings — after
  an upcaster for its ``schema_version`` was declared (``core/upcast.py``). Its landed rows are
  removed and the next run lands the same verified files again; the blocked attempt stays in
  ``load_date_attempts`` and the relanding in ``batch_relandings``. A version still undeclared
  blocks the date again, exactly as before."""

from __future__ import annotations

import duckdb

from replay_assets.core.errors import ErrorCode, ReplayError, Violation
from replay_assets.core.plan import DatePlan
from replay_assets.core.status import DateStatus
from replay_assets.storage.db.warehouse import one
from replay_assets.usecases.context import Pipeline
from replay_assets.usecases.decide import decide_with, plan_for

# a batch's landed rows, removed by a relanding (the delivered files stay in the landing area)
LANDED_TABLES = (
    "raw_receipts",
    "staged_events",
    "rejected_events",
    "batch_violations",
    "upcast_events",
    "source_records",
    "landed_files",
    "reconciliation",
    "manifests",
)


def reland(pipeline: Pipeline, batch_id: str, note: str, operator: str) -> str:
    """Remove the landed rows of a batch the schema gate blocked so the next run lands it again
    under today's upcasters; returns its load date. Refused for any other batch."""
    with pipeline.warehouse.transaction() as con:
        known = one(con, "SELECT load_date, manifest_sha256 FROM manifests WHERE batch_id = ?", [batch_id])
        if not known:
            raise ReplayError(ErrorCode.UNKNOWN_BATCH, f"no landed batch with batch id {batch_id}")
        day, manifest_sha = str(known[0]), str(known[1])
        decision, _ = decide_with(pipeline, con)
        plan = plan_for(decision, day)
        gated = one(
            con,
            "SELECT count(*) FROM batch_violations WHERE batch_id = ? AND rule = ?",
            [batch_id, Violation.UNSUPPORTED_SCHEMA_VERSION.value],
        )
        if plan.status is not DateStatus.BLOCKED or not gated or not gated[0]:
            raise ReplayError(
                ErrorCode.USAGE,
                f"batch {batch_id} is not blocked by the schema gate (load date {day} is {plan.status}); "
                "only such a batch can be landed again",
            )
        rejected = one(con, "SELECT count(*) FROM rejected_events WHERE batch_id = ?", [batch_id])
        now = pipeline.now()
        con.execute(
            "INSERT INTO batch_relandings (batch_id, load_date, manifest_sha256, violations, rejected, "
            "note, operator, relanded_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [
                batch_id,
                day,
                manifest_sha,
                gated[0],
                rejected[0] if rejected else 0,
                note,
                operator,
                now,
            ],
        )
        for table in LANDED_TABLES:  # constant names
            con.execute(f"DELETE FROM {table} WHERE batch_id = ?", [batch_id])
        con.execute(  # the newest attempt of this input: ready again (a new block will follow it)
            "INSERT INTO load_date_attempts (load_date, identity, status, reason, attempted_at) "
            "VALUES (?, ?, ?, ?, ?)",
            [
                day,
                plan.identity,
                DateStatus.READY.value,
                f"batch {batch_id} to be landed again",
                now,
            ],
        )
        return day


def resolve(pipeline: Pipeline, batch_id: str, note: str, operator: str) -> None:
    with pipeline.warehouse.transaction() as con:
        decision, _ = decide_with(pipeline, con)
        delivered = {d.load_date for p in decision.plans for d in p.batches if d.batch_id == batch_id}
        known = one(con, "SELECT load_date FROM manifests WHERE batch_id = ?", [batch_id])
        if not delivered and not known:
            raise ReplayError(ErrorCode.UNKNOWN_BATCH, f"no delivery with batch id {batch_id}")
        days = sorted(delivered | ({str(known[0])} if known else set()))
        plans = [plan_for(decision, day) for day in days]
        if not any(_blocks(con, plan, batch_id) for plan in plans):
            states = ", ".join(f"{p.load_date} {p.status}" for p in plans)
            raise ReplayError(
                ErrorCode.USAGE,
                f"batch {batch_id} does not block its load date ({states}); only a batch that "
                "blocks a BLOCKED or BLOCKED_UPSTREAM load date can be skipped",
            )
        con.execute(
            """INSERT OR REPLACE INTO batch_resolutions (batch_id, action, note, operator, resolved_at)
               VALUES (?, 'skip', ?, ?, ?)""",
            [batch_id, note, operator, pipeline.now()],
        )
        con.execute("UPDATE reconciliation SET status = 'SKIPPED' WHERE batch_id = ?", [batch_id])


def _blocks(con: duckdb.DuckDBPyConnection, plan: DatePlan, batch_id: str) -> bool:
    """Whether ``batch_id`` is what blocks ``plan``'s load date: a contract violation of its
    own, or its delivery is the one not ready (named by the reason)."""
    if plan.status is DateStatus.BLOCKED:
        violated = one(
            con,
            "SELECT 1 FROM batch_violations WHERE batch_id = ? AND load_date = ?",
            [batch_id, plan.load_date],
        )
        return violated is not None and batch_id in {d.batch_id for d in plan.batches}
    if plan.status is DateStatus.BLOCKED_UPSTREAM:
        named = any(f"batch {batch_id}{end}" in plan.reason for end in (" ", ":"))
        return any(d.batch_id == batch_id and (d.not_ready or named) for d in plan.batches)
    return False
