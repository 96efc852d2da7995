"""An operator's decision to skip a batch that blocks its load date (audited); the date can then
apply without it. A batch that blocks nothing is refused: skipping a healthy batch would apply
its load date without its events."""

from __future__ import annotations

import duckdb

from replay_assets.core.errors import ErrorCode, ReplayError
from replay_assets.core.plan import DatePlan
from replay_assets.core.status import DateStatus
from replay_assets.storage.db.warehouse import one
from replay_assets.usecases.context import Pipeline
from replay_assets.usecases.decide import decide_with, plan_for


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
