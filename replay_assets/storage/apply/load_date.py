"""Applying one load date: one transaction covering state history, tombstones, the event
registry, the restatement queue, watermarks, reconciliation, the snapshot record and the commit
marker (SPEC 3.7). The caller owns the transaction; nothing here commits."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field, replace
from typing import Any

import duckdb
import polars as pl

from replay_assets.core.aggregate import Controls
from replay_assets.core.errors import ErrorCode, ReplayError
from replay_assets.core.gate import CheckOutcome, all_passed, failures, outcome_from_record, outcome_record
from replay_assets.core.plan import DatePlan
from replay_assets.core.state import Counts
from replay_assets.core.status import ApplyOutcome
from replay_assets.storage.apply import latest, state_digest
from replay_assets.storage.apply import writes as records
from replay_assets.storage.apply.snapshot_scan import Snapshot, check_written
from replay_assets.storage.apply.stage import (
    drop_fold,
    stage_fold,
)
from replay_assets.storage.db.warehouse import one
from replay_assets.storage.publish import certify


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


def _mode(con: duckdb.DuckDBPyConnection, plan: DatePlan, sealed_ok: bool, restate: bool) -> ApplyOutcome:
    day = plan.load_date
    row = one(con, "SELECT identity FROM load_dates WHERE load_date = ?", [day])
    if restate and row is not None:
        return ApplyOutcome.RESTATED  # an earlier load date of its chain was folded again
    latest = one(con, "SELECT max(load_date) FROM load_dates")
    later = latest is not None and latest[0] is not None and latest[0] > day
    if later and not sealed_ok:
        if row is not None and row[0] == plan.identity:
            return ApplyOutcome.UNCHANGED
        raise ReplayError(
            ErrorCode.LOAD_DATE_SEALED, f"load date {day} is sealed: later load dates are applied"
        )
    if row is None:
        return ApplyOutcome.APPLIED
    return ApplyOutcome.UNCHANGED if row[0] == plan.identity else ApplyOutcome.RESTATED


def apply_load_date(
    con: duckdb.DuckDBPyConnection,
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
    mode = _mode(con, plan, sealed_ok, restate)
    try:
        stage_fold(con, [b.batch_id for b in plan.batches], plan.load_date)
        return _apply_folded(con, plan, mode=mode, first_date=first_date, run_id=run_id, now=now)
    finally:
        drop_fold(con)


def _apply_folded(
    con: duckdb.DuckDBPyConnection,
    plan: DatePlan,
    mode: ApplyOutcome,
    first_date: str,
    run_id: str | None,
    now: dt.datetime,
) -> ApplyResult:
    day = plan.load_date
    counts = records.batch_counts(con, plan)
    violations = records.violations(con, plan)
    if violations.height:
        records.record_blocked(con, plan, found=violations, counts=counts, now=now)
        reasons = tuple(violations["detail"].to_list()[:5])
        return ApplyResult(day, ApplyOutcome.BLOCKED, counts, reasons=reasons)
    if mode == ApplyOutcome.UNCHANGED:
        if not records.same_history(con, day):
            raise ReplayError(
                ErrorCode.HISTORY_DIVERGED,
                f"recomputing load date {day} from raw differs from stored history",
            )
        return _result(
            con,
            day,
            mode=ApplyOutcome.UNCHANGED,
            counts=counts,
            dates=(),
            first_date=first_date,
            run_id=run_id,
            now=now,
        )
    if mode == ApplyOutcome.RESTATED:
        records.undo_load_date(con, day, now)
    dates = records.affected_groups(con)
    history = records.write_history(con, day)
    records.register_events(con, day)
    groups = records.queue_groups(con, dates, day, now)
    records.advance_watermarks(con, plan, day)
    records.write_reconciliation(con, plan, counts, "APPLIED")
    con.execute(
        "INSERT OR REPLACE INTO load_dates (load_date, identity, applied_at, run_id) VALUES (?, ?, ?, ?)",
        [day, plan.identity, now, run_id],
    )
    result = _result(
        con, day, mode=mode, counts=counts, dates=tuple(dates), first_date=first_date, run_id=run_id, now=now
    )
    latest.advance(con, day)  # after the gate read the state before ``day`` from it
    written = replace(result, rows_written=history + groups + len(counts))
    if result.status is ApplyOutcome.FAILED_CANDIDATE:
        return replace(written, candidate_rows=records.candidate_rows(con, day))
    return written


def _result(
    con: duckdb.DuckDBPyConnection,
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
    before = state_digest.previous_date(con, day)
    base_sums, base_controls = state_digest.base(con, before)
    first, from_latest = before is None, latest.holds_before(con, day)
    sums = base_sums.plus(state_digest.change(con, day, first=first, from_latest=from_latest))
    controls, recomputed = state_digest.controls_by_change(
        con, day, base_controls, first=first, from_latest=from_latest
    )
    verdicts = check_written(con, day)
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
        certify.state_checks(
            con, day, snapshot=snapshot, counts=counts, first=first_date, recomputed=recomputed
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
        certify.certify_state(con, day, digest=digest, outcomes=checks, run_id=run_id, now=now)
        certify.write_snapshot(con, day, controls=controls, rows=rows, digest=digest)
        state_digest.store(con, day, sums)
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
