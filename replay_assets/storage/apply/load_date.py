"""Applying one load date: one transaction covering state history, tombstones, the event
registry, the restatement queue, watermarks, reconciliation, the snapshot record and the commit
marker. The caller owns the transaction; nothing here commits. Engine-neutral: the steps are
a port (``steps.py``), so every engine applies a date by this one procedure."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field, replace
from typing import Any

import polars as pl

from replay_assets.core.aggregate import Controls
from replay_assets.core.errors import ErrorCode, ReplayError
from replay_assets.core.gate import CheckOutcome, all_passed, failures, outcome_from_record, outcome_record
from replay_assets.core.plan import DatePlan
from replay_assets.core.state import Counts
from replay_assets.core.status import ApplyOutcome
from replay_assets.storage.apply.row_checks import Snapshot
from replay_assets.storage.apply.steps import ApplySteps


@dataclass(frozen=True)
class ApplyResult:
    load_date: str
    status: ApplyOutcome
    counts: dict[str, Counts] = field(default_factory=dict)
    affected_business_dates: tuple[str, ...] = ()
    controls: Controls | None = None
    content_sha256: str | None = None
    reasons: tuple[str, ...] = ()
    checks: tuple[CheckOutcome, ...] = ()
    candidate_rows: pl.DataFrame | None = None  # the history rows a failed candidate would write
    rows_written: int = 0
    row_count: int = 0  # rows of the state snapshot as of the load date


def _mode(steps: ApplySteps, plan: DatePlan, sealed_ok: bool, restate: bool) -> ApplyOutcome:
    day = plan.load_date
    identity = steps.fold.applied_identity(day)
    if restate and identity is not None:
        return ApplyOutcome.RESTATED  # an earlier load date of its chain was folded again
    newest = steps.fold.newest_applied()
    later = newest is not None and newest > day
    if later and not sealed_ok:
        if identity is not None and identity == plan.identity:
            return ApplyOutcome.UNCHANGED
        raise ReplayError(
            ErrorCode.LOAD_DATE_SEALED, f"load date {day} is sealed: later load dates are applied"
        )
    if identity is None:
        return ApplyOutcome.APPLIED
    return ApplyOutcome.UNCHANGED if identity == plan.identity else ApplyOutcome.RESTATED


def apply_load_date(
    steps: ApplySteps,
    plan: DatePlan,
    first_date: str,
    run_id: str | None,
    now: dt.datetime,
    sealed_ok: bool = False,
    *,
    restate: bool = False,
) -> ApplyResult:
    """Fold the load date onto state as of the day before. Idempotent: the same input again
    verifies against stored history (REPLAY_HISTORY_DIVERGED if it differs) and writes nothing.
    ``restate`` folds an applied date again whole although its own input is unchanged: a late
    delivery re-applied an earlier date, so the state it builds on changed."""
    mode = _mode(steps, plan, sealed_ok, restate)
    try:
        steps.fold.stage_fold([b.batch_id for b in plan.batches], plan.load_date)
        return _apply_folded(steps, plan, mode=mode, first_date=first_date, run_id=run_id, now=now)
    finally:
        steps.fold.drop_fold()


def _apply_folded(
    steps: ApplySteps,
    plan: DatePlan,
    mode: ApplyOutcome,
    first_date: str,
    run_id: str | None,
    now: dt.datetime,
) -> ApplyResult:
    day = plan.load_date
    counts = steps.fold.batch_counts(plan)
    violations = steps.fold.violations(plan)
    if violations.height:
        steps.fold.record_blocked(plan, found=violations, counts=counts, now=now)
        reasons = tuple(violations["detail"].to_list()[:5])
        return ApplyResult(day, ApplyOutcome.BLOCKED, counts, reasons=reasons)
    if mode == ApplyOutcome.UNCHANGED:
        if not steps.fold.same_history(day):
            raise ReplayError(
                ErrorCode.HISTORY_DIVERGED,
                f"recomputing load date {day} from raw differs from stored history",
            )
        return _result(
            steps,
            day,
            mode=ApplyOutcome.UNCHANGED,
            counts=counts,
            dates=(),
            first_date=first_date,
            run_id=run_id,
            now=now,
        )
    if mode == ApplyOutcome.RESTATED:
        steps.fold.undo_load_date(day, now)
    dates = steps.writes.affected_groups()
    history = steps.writes.write_history(day)
    steps.writes.register_events(day)
    groups = steps.writes.queue_groups(dates, day, now)
    steps.writes.advance_watermarks(plan, day)
    steps.writes.write_reconciliation(plan, counts, "APPLIED")
    steps.fold.record_applied(day, plan.identity, now, run_id)
    result = _result(
        steps,
        day,
        mode=mode,
        counts=counts,
        dates=tuple(dates),
        first_date=first_date,
        run_id=run_id,
        now=now,
    )
    steps.writes.advance_latest(day)  # after the gate read the state before ``day`` from it
    written = replace(result, rows_written=history + groups + len(counts))
    if result.status is ApplyOutcome.FAILED_CANDIDATE:
        return replace(written, candidate_rows=steps.writes.candidate_rows(day))
    return written


def _result(
    steps: ApplySteps,
    day: str,
    mode: ApplyOutcome,
    counts: dict[str, Counts],
    dates: tuple[str, ...],
    first_date: str,
    run_id: str | None,
    now: dt.datetime,
) -> ApplyResult:
    """Gate the state as of ``day``; certify it (publication, pointer, snapshot) when all pass.
    By change: the row checks cover the rows ``day`` wrote, the content hash and controls are
    the previous date's plus what ``day`` changed (``state_digest.py``)."""
    gate = steps.gate
    before = gate.previous_date(day)
    base_sums, base_controls = gate.digest_base(before)
    first, from_latest = before is None, steps.writes.latest_holds_before(day)
    sums = base_sums.plus(gate.digest_change(day, first=first, from_latest=from_latest))
    controls, recomputed = gate.controls_by_change(day, base_controls, first=first, from_latest=from_latest)
    verdicts = gate.check_written(day)
    digest = sums.content_sha256
    snapshot = Snapshot(
        digest,
        controls,
        rows=sums.rows,
        schema=verdicts.schema,
        unique_keys=verdicts.unique_keys,
        non_negative=verdicts.non_negative,
    )
    checks = tuple(
        steps.gate.state_checks(
            day, snapshot=snapshot, counts=counts, first=first_date, recomputed=recomputed
        )
    )
    if not all_passed(checks):
        return ApplyResult(
            day,
            ApplyOutcome.FAILED_CANDIDATE,
            counts=counts,
            affected_business_dates=dates,
            controls=controls,
            content_sha256=digest,
            reasons=(failures(checks),),
            checks=checks,
        )
    rows = snapshot.rows
    if mode != ApplyOutcome.UNCHANGED:
        gate.certify_state(day, digest=digest, outcomes=checks, run_id=run_id, now=now)
        gate.write_snapshot(day, controls=controls, rows=rows, digest=digest)
        gate.store_digest(day, sums)
    return ApplyResult(
        day,
        mode,
        counts=counts,
        affected_business_dates=dates,
        controls=controls,
        content_sha256=digest,
        reasons=(),
        checks=checks,
        row_count=rows,
    )


def to_record(result: ApplyResult) -> dict[str, Any]:
    """The journal's recorded result: identities, counts, hashes and check verdicts (no rows)."""
    return {
        "load_date": result.load_date,
        "status": result.status.value,
        "counts": {b: c.__dict__ for b, c in result.counts.items()},
        "affected_business_dates": list(result.affected_business_dates),
        "controls": list(result.controls.as_tuple()) if result.controls else None,
        "content_sha256": result.content_sha256,
        "reasons": list(result.reasons),
        "checks": [outcome_record(o) for o in result.checks],
        "rows_written": result.rows_written,
        "row_count": result.row_count,
    }


def from_record(record: dict[str, Any]) -> ApplyResult:
    return ApplyResult(
        record["load_date"],
        ApplyOutcome(record["status"]),
        counts={b: Counts(**c) for b, c in record["counts"].items()},
        affected_business_dates=tuple(record["affected_business_dates"]),
        controls=Controls(*record["controls"]) if record["controls"] else None,
        content_sha256=record["content_sha256"],
        reasons=tuple(record["reasons"]),
        checks=tuple(outcome_from_record(c) for c in record["checks"]),
        candidate_rows=None,
        rows_written=record["rows_written"],
        row_count=record["row_count"],
    )
