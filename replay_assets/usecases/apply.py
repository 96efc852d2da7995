"""Applying one landed load date: fold it and gate the result in the same transaction, as a
journaled operation, so a retry (another try or run id, after a crash anywhere) never mutates
twice. BLOCKED evidence is committed before the error is raised; a failed candidate is rolled
back, then kept inspectable while consumers keep the last certified state."""

from __future__ import annotations

from typing import Any

import duckdb

from replay_assets.core.errors import ErrorCode, ReplayError
from replay_assets.core.plan import DatePlan
from replay_assets.core.status import ApplyOutcome, DateStatus
from replay_assets.storage.apply.facts import require_landed
from replay_assets.storage.apply.load_date import ApplyResult, apply_load_date, from_record, to_record
from replay_assets.storage.db import failpoints
from replay_assets.storage.evidence.costs import Cost, measure, record_cost
from replay_assets.storage.journal import executor as journal
from replay_assets.storage.journal.identities import apply_operation
from replay_assets.storage.publish import certify
from replay_assets.usecases.context import Pipeline
from replay_assets.usecases.decide import APPLICABLE, decide_with, plan_for
from replay_assets.usecases.recover import refresh_published


def apply(pipeline: Pipeline, load_date: str, run_id: str | None, sealed_ok: bool = False) -> ApplyResult:
    with pipeline.warehouse.connect() as con:
        decision, _ = decide_with(pipeline, con)
        plan = plan_for(decision, load_date)
        allowed = APPLICABLE | ({DateStatus.LATE_DELIVERY} if sealed_ok else set())
        if plan.status not in allowed:
            raise ReplayError(ErrorCode.NOT_READY, f"load date {load_date} is {plan.status}: {plan.reason}")
        require_landed(con, plan)
        op = apply_operation(con, plan)
    first = decision.plans[0].load_date

    def mutate(con: duckdb.DuckDBPyConnection) -> tuple[dict[str, Any], str | None]:
        with measure() as cost:
            result = apply_load_date(
                con, plan, first_date=first, run_id=run_id, now=pipeline.now(), sealed_ok=sealed_ok
            )
        if result.status is ApplyOutcome.FAILED_CANDIDATE:
            raise journal.Divert(
                lambda c: _keep_failed_state(pipeline, c, plan=plan, result=result, cost=cost, run_id=run_id)
            )
        _record_apply_cost(pipeline, con, result=result, cost=cost, run_id=run_id, candidate_bytes=0)
        failpoints.hit(pipeline.settings.fail_point, "apply.before_commit")
        certified = result.status in (ApplyOutcome.APPLIED, ApplyOutcome.RESTATED, ApplyOutcome.UNCHANGED)
        digest = result.content_sha256 or ""
        return to_record(result), certify.target_digest(con, load_date, digest) if certified else None

    def target_now(con: duckdb.DuckDBPyConnection, entry: journal.Entry) -> str | None:
        if entry.target_sha256 is None:
            return None  # a blocked or failed outcome has no target state to compare
        verified = apply_load_date(
            con, plan, first_date=first, run_id=run_id, now=pipeline.now(), sealed_ok=True
        )  # from raw; read-only
        return certify.target_digest(con, load_date, verified.content_sha256 or "")

    def repair(con: duckdb.DuckDBPyConnection) -> tuple[dict[str, Any], str | None]:
        """The history matches raw but its certified record drifted: certify it again."""
        verified = apply_load_date(
            con, plan, first_date=first, run_id=run_id, now=pipeline.now(), sealed_ok=True
        )
        if (
            verified.status is ApplyOutcome.FAILED_CANDIDATE
            or verified.controls is None
            or verified.content_sha256 is None
        ):
            raise ReplayError(ErrorCode.HISTORY_DIVERGED, f"load date {load_date} cannot be certified again")
        reason = "repaired: the stored snapshot record drifted from history recomputed from raw"
        certify.certify_state(
            con,
            load_date,
            digest=verified.content_sha256,
            outcomes=verified.checks,
            run_id=run_id,
            now=pipeline.now(),
            repair_reason=reason,
        )
        certify.write_snapshot(
            con,
            load_date,
            controls=verified.controls,
            rows=verified.row_count,
            digest=verified.content_sha256,
        )
        return to_record(verified), certify.target_digest(con, load_date, verified.content_sha256)

    record = journal.execute(
        pipeline.warehouse,
        op,
        mutate=mutate,
        evidence=lambda: refresh_published(pipeline),
        target_now=target_now,
        clock=pipeline.now,
        fail_point=pipeline.settings.fail_point,
        repair=repair,
    )
    failpoints.hit(pipeline.settings.fail_point, "apply.after_commit")
    result = from_record(record)
    if result.status is ApplyOutcome.BLOCKED:
        raise ReplayError(ErrorCode.BATCH_BLOCKED, f"load date {load_date}: {result.reasons[0]}")
    return result


def _record_apply_cost(
    pipeline: Pipeline,
    con: duckdb.DuckDBPyConnection,
    result: ApplyResult,
    cost: Cost,
    run_id: str | None,
    candidate_bytes: int,
) -> None:
    events = sum(c.source_events for c in result.counts.values())
    record_cost(
        con,
        run_id=run_id,
        step="apply",
        partition_key=result.load_date,
        cost=cost,
        now=pipeline.now(),
        events=events,
        rows_written=result.rows_written,
        candidate_bytes=candidate_bytes,
    )


def _keep_failed_state(
    pipeline: Pipeline,
    con: duckdb.DuckDBPyConnection,
    plan: DatePlan,
    result: ApplyResult,
    cost: Cost,
    run_id: str | None,
) -> tuple[dict[str, Any], str | None]:
    assert result.candidate_rows is not None and result.content_sha256 is not None
    path = certify.record_failed_candidate(
        con,
        pipeline.settings.home,
        asset="current_orders",
        key=plan.load_date,
        as_of=plan.load_date,
        digest=result.content_sha256,
        outcomes=result.checks,
        rows=result.candidate_rows,
        run_id=run_id,
        now=pipeline.now(),
    )
    _record_apply_cost(
        pipeline, con, result=result, cost=cost, run_id=run_id, candidate_bytes=path.stat().st_size
    )
    con.execute(
        "INSERT INTO load_date_attempts (load_date, identity, status, reason, attempted_at) "
        "VALUES (?, ?, ?, ?, ?)",
        [plan.load_date, plan.gate_key, DateStatus.FAILED_CANDIDATE.value, result.reasons[0], pipeline.now()],
    )
    return to_record(result), None
