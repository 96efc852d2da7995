"""Applying one landed load date: fold it and gate the result in the same transaction, as a
journaled operation, so a retry (another try or run id, after a crash anywhere) never mutates
twice. BLOCKED evidence is committed before the error is raised; a failed candidate is rolled
back, then kept inspectable while consumers keep the last certified state.

A late delivery on a sealed load date D (later dates already built on it; the backfill lane
only) re-applies the chain D..latest applied date in order, each date folded again whole on the
state the previous one left and gated, all in the one transaction of D's operation: consumers see
the old chain or the new one, never a mix, and a kill anywhere leaves the old one."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from replay_assets.core import retention
from replay_assets.core.blame import late_conflict_reason
from replay_assets.core.errors import ErrorCode, ReplayError
from replay_assets.core.plan import DatePlan
from replay_assets.core.status import ApplyOutcome, DateStatus, PartitionStatus
from replay_assets.storage.apply.load_date import ApplyResult, from_record, to_record
from replay_assets.storage.evidence.costs import Cost, measure
from replay_assets.storage.home import failpoints
from replay_assets.storage.journal import executor as journal
from replay_assets.storage.unit import WarehouseWriter
from replay_assets.usecases.context import Pipeline
from replay_assets.usecases.decide import APPLICABLE, Decision, decide_with, plan_for
from replay_assets.usecases.land import land
from replay_assets.usecases.prune import prune
from replay_assets.usecases.recover import refresh_published


def apply(
    pipeline: Pipeline, load_date: str, run_id: str | None, sealed_ok: bool = False, *, refresh: bool = True
) -> ApplyResult:
    """``refresh=False`` leaves the published copy to the caller, who applies several load dates
    in one run and refreshes it once after the last (or the first that fails): the copy catches
    up on whatever was certified since its last export (``published/exported.json``)."""
    with pipeline.doing("apply", load_date, run_id):
        return _apply(pipeline, load_date, run_id, sealed_ok, refresh=refresh)


def _apply(
    pipeline: Pipeline, load_date: str, run_id: str | None, sealed_ok: bool, *, refresh: bool
) -> ApplyResult:
    allowed = APPLICABLE | ({DateStatus.LATE_DELIVERY} if sealed_ok else set())
    if sealed_ok:  # the backfill lane: another late delivery inside the chain is landed now
        with pipeline.store.connect() as unit:
            decision, _ = decide_with(pipeline, unit)
        for later in _chain(decision, plan_for(decision, load_date))[1:]:
            if later.status is DateStatus.LATE_DELIVERY:
                land(pipeline, later.load_date, run_id, sealed_ok=True)
    with pipeline.store.connect() as unit:
        decision, _ = decide_with(pipeline, unit)
        plan = plan_for(decision, load_date)
        if plan.status not in allowed:
            raise ReplayError(ErrorCode.NOT_READY, f"load date {load_date} is {plan.status}: {plan.reason}")
        behind = retention.refusal(load_date, unit.retention.pruned_through(), "re-applying")
        if behind:
            raise ReplayError(ErrorCode.BEHIND_HORIZON, behind)
        chain = _chain(decision, plan)
        for each in chain:
            unit.apply.require_landed(each)
        op = unit.apply.apply_operation(plan)
    first = decision.plans[0].load_date

    def mutate(unit: WarehouseWriter) -> tuple[dict[str, Any], str | None]:
        with measure() as cost:
            results = _apply_chain(pipeline, unit, chain, first=first, run_id=run_id, sealed_ok=sealed_ok)
        result, stopped = _chained(results), results[-1]
        if stopped.status is ApplyOutcome.FAILED_CANDIDATE:
            failed = chain[len(results) - 1]
            raise journal.Divert(
                lambda c: _keep_failed_state(
                    pipeline, c, plan=failed, result=stopped, cost=cost, run_id=run_id
                )
            )
        if stopped.status is ApplyOutcome.BLOCKED and len(results) > 1:
            raise journal.Divert(lambda c: _block_chain(pipeline, c, chain=chain, blocked=stopped))
        _record_apply_cost(pipeline, unit, result=result, cost=cost, run_id=run_id, candidate_bytes=0)
        failpoints.hit(pipeline.settings.fail_point, "apply.before_commit")
        certified = result.status in (ApplyOutcome.APPLIED, ApplyOutcome.RESTATED, ApplyOutcome.UNCHANGED)
        digest = result.content_sha256 or ""
        return to_record(result), unit.apply.target_digest(load_date, digest) if certified else None

    def target_now(unit: WarehouseWriter, entry: journal.Entry) -> str | None:
        if entry.target_sha256 is None:
            return None  # a blocked or failed outcome has no target state to compare
        verified = unit.apply.apply_load_date(
            plan, first_date=first, run_id=run_id, now=pipeline.now(), sealed_ok=True
        )  # from raw; read-only
        return unit.apply.target_digest(load_date, verified.content_sha256 or "")

    def repair(unit: WarehouseWriter) -> tuple[dict[str, Any], str | None]:
        """The history matches raw but its certified record drifted: certify it again."""
        verified = unit.apply.apply_load_date(
            plan, first_date=first, run_id=run_id, now=pipeline.now(), sealed_ok=True
        )
        if (
            verified.status is ApplyOutcome.FAILED_CANDIDATE
            or verified.controls is None
            or verified.content_sha256 is None
        ):
            raise ReplayError(ErrorCode.HISTORY_DIVERGED, f"load date {load_date} cannot be certified again")
        reason = "repaired: the stored snapshot record drifted from history recomputed from raw"
        unit.apply.certify_state(
            load_date,
            digest=verified.content_sha256,
            outcomes=verified.checks,
            run_id=run_id,
            now=pipeline.now(),
            repair_reason=reason,
        )
        unit.apply.write_snapshot(
            load_date,
            controls=verified.controls,
            rows=verified.row_count,
            digest=verified.content_sha256,
        )
        return to_record(verified), unit.apply.target_digest(load_date, verified.content_sha256)

    record = journal.execute(
        pipeline.store,
        op,
        mutate=mutate,
        evidence=lambda: refresh_published(pipeline) if refresh else None,
        target_now=target_now,
        clock=pipeline.now,
        fail_point=pipeline.settings.fail_point,
        repair=repair,
    )
    failpoints.hit(pipeline.settings.fail_point, "apply.after_commit")
    result = from_record(record)
    if result.status is ApplyOutcome.BLOCKED:
        raise ReplayError(ErrorCode.BATCH_BLOCKED, f"load date {load_date}: {result.reasons[0]}")
    if result.status is not ApplyOutcome.FAILED_CANDIDATE:
        prune(pipeline)  # the horizon moved: each pruning its own journaled operation
    return result


def _record_apply_cost(
    pipeline: Pipeline,
    unit: WarehouseWriter,
    result: ApplyResult,
    cost: Cost,
    run_id: str | None,
    candidate_bytes: int,
) -> None:
    events = sum(c.source_events for c in result.counts.values())
    unit.evidence.record_cost(
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
    unit: WarehouseWriter,
    plan: DatePlan,
    result: ApplyResult,
    cost: Cost,
    run_id: str | None,
) -> tuple[dict[str, Any], str | None]:
    assert result.candidate_rows is not None and result.content_sha256 is not None
    path = unit.publish.record_failed_candidate(
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
        pipeline, unit, result=result, cost=cost, run_id=run_id, candidate_bytes=path.stat().st_size
    )
    unit.evidence.insert_attempt(
        plan.load_date,
        plan.gate_key,
        status=DateStatus.FAILED_CANDIDATE.value,
        reason=result.reasons[0],
        now=pipeline.now(),
    )
    return to_record(result), None


def _chain(decision: Decision, plan: DatePlan) -> list[DatePlan]:
    """The load dates one application writes: the date itself, or for a late delivery on a sealed
    date D, D and every applied date after it (each built on the one before)."""
    if plan.status is not DateStatus.LATE_DELIVERY:
        return [plan]
    later = (DateStatus.APPLIED, DateStatus.LATE_DELIVERY)
    return [p for p in decision.plans if p.load_date >= plan.load_date and p.status in later]


def _apply_chain(
    pipeline: Pipeline,
    unit: WarehouseWriter,
    chain: list[DatePlan],
    *,
    first: str,
    run_id: str | None,
    sealed_ok: bool,
) -> list[ApplyResult]:
    """Fold and gate each date of the chain in order, in the caller's transaction; stops at the
    first date that is blocked or fails its gate."""
    for later in chain[1:]:  # their event ids and history may meet the late delivery's: undo first
        unit.apply.undo_load_date(later.load_date, pipeline.now())
    results: list[ApplyResult] = []
    for n, each in enumerate(chain):
        if n:
            failpoints.hit(pipeline.settings.fail_point, "restate.between_dates")
        result = unit.apply.apply_load_date(
            each, first_date=first, run_id=run_id, now=pipeline.now(), sealed_ok=sealed_ok, restate=n > 0
        )
        results.append(result)
        if result.status in (ApplyOutcome.FAILED_CANDIDATE, ApplyOutcome.BLOCKED):
            break
    return results


def _chained(results: list[ApplyResult]) -> ApplyResult:
    """The first date's result, with what the whole chain changed."""
    dates = sorted({d for r in results for d in r.affected_business_dates})
    return replace(
        results[0],
        affected_business_dates=tuple(dates),
        rows_written=sum(r.rows_written for r in results),
    )


def _block_chain(
    pipeline: Pipeline, unit: WarehouseWriter, *, chain: list[DatePlan], blocked: ApplyResult
) -> tuple[dict[str, Any], str | None]:
    """A later date of the chain broke the contract with the late delivery in place (e.g. an event
    id it reuses with other content): nothing of the chain applies; the late date is BLOCKED,
    blamed on its late batch (``core/blame.py``)."""
    reason = late_conflict_reason(chain, blocked.load_date, blocked.reasons[0])
    unit.apply.record_attempt(chain[0], status=PartitionStatus.BLOCKED, reason=reason, now=pipeline.now())
    return to_record(ApplyResult(chain[0].load_date, ApplyOutcome.BLOCKED, reasons=(reason,))), None
