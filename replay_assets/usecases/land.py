"""Landing a load date: every active batch's files read once as a stream and checked against
its manifest (sha256, counts) in the same pass, in one writer transaction."""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Mapping, Sequence

from replay_assets.core import retention
from replay_assets.core.config import Settings
from replay_assets.core.errors import ErrorCode, ReplayError
from replay_assets.core.events import ValidationContext
from replay_assets.core.manifest import Manifest
from replay_assets.core.plan import DatePlan
from replay_assets.core.status import DateStatus, PartitionStatus
from replay_assets.storage.evidence.costs import measure
from replay_assets.storage.home import failpoints
from replay_assets.storage.landing import area as landing_area
from replay_assets.storage.landing import prefetch
from replay_assets.storage.landing.ingest import Landed
from replay_assets.storage.unit import WarehouseWriter
from replay_assets.usecases.context import Pipeline
from replay_assets.usecases.decide import APPLICABLE, decide_with, plan_for


def land(
    pipeline: Pipeline, load_date: str, run_id: str | None = None, *, sealed_ok: bool = False
) -> list[Landed]:
    """Land every active batch of the load date. A mismatch rolls everything back, records
    BLOCKED_UPSTREAM naming the file and lands nothing. ``sealed_ok`` (the backfill lane) also
    lands a late delivery for a load date later dates already built on."""
    with pipeline.doing("land", load_date, run_id):
        return _land(pipeline, load_date, run_id, sealed_ok=sealed_ok)


def _land(pipeline: Pipeline, load_date: str, run_id: str | None, *, sealed_ok: bool) -> list[Landed]:
    allowed = APPLICABLE | ({DateStatus.LATE_DELIVERY} if sealed_ok else set())
    try:
        with pipeline.store.transaction() as unit:
            decision, by_sha = decide_with(pipeline, unit)
            plan = plan_for(decision, load_date)
            if plan.status not in allowed:
                raise ReplayError(
                    ErrorCode.NOT_READY, f"load date {load_date} is {plan.status}: {plan.reason}"
                )
            behind = retention.refusal(load_date, unit.retention.pruned_through(), "landing a late batch")
            if behind and plan.status is DateStatus.LATE_DELIVERY:
                raise ReplayError(ErrorCode.BEHIND_HORIZON, behind)
            landed = [
                _land_batch(
                    pipeline, unit, seen=by_sha[d.manifest_sha256], load_date=load_date, run_id=run_id
                )
                for d in plan.batches
            ]
            # the landing's files are in the home's segments, not yet registered by a commit
            failpoints.hit(pipeline.settings.fail_point, "land.before_commit")
        _prefetch_next(pipeline, decision.plans, by_sha, after=load_date)
        return landed
    except landing_area.DeliveryMismatch as mismatch:
        problem = str(mismatch)
    with pipeline.store.transaction() as unit:
        decision, _ = decide_with(pipeline, unit)
        plan = plan_for(decision, load_date)
        unit.apply.record_attempt(
            plan, status=PartitionStatus.BLOCKED_UPSTREAM, reason=problem, now=pipeline.now()
        )
    raise ReplayError(ErrorCode.NOT_READY, f"load date {load_date}: {problem}")


def _prefetch_next(
    pipeline: Pipeline, plans: Sequence[DatePlan], by_sha: Mapping[str, landing_area.Seen], after: str
) -> None:
    """While ``after`` applies, have the next load date to land prepared in the background (only
    where prefetching is enabled: ``replay-assets run``; ``storage/landing/prefetch.py``)."""
    if not prefetch.is_enabled():
        return
    later = [p for p in plans if p.load_date > after and p.status in APPLICABLE - {DateStatus.APPLIED}]
    files = []
    for d in min(later, key=lambda p: p.load_date).batches if later else ():
        seen = by_sha.get(d.manifest_sha256)
        if seen is not None and seen.manifest is not None:
            ctx = validation_context(pipeline, seen.manifest)
            files += [(f, ctx) for f in landing_area.delivery_files(seen.path.parent, seen.manifest)]
    prefetch.start(files)


def _land_batch(
    pipeline: Pipeline,
    unit: WarehouseWriter,
    seen: landing_area.Seen,
    load_date: str,
    run_id: str | None,
) -> Landed:
    manifest = seen.manifest
    assert manifest is not None
    files = landing_area.delivery_files(seen.path.parent, manifest)
    records = landing_area.records_file(seen.path.parent, manifest)
    try:
        with measure() as cost:
            batch = unit.landing.land_batch(
                manifest,
                files=files,
                ctx=validation_context(pipeline, manifest),
                now=pipeline.now(),
                records=records,
            )
    except landing_area.DeliveryMismatch as mismatch:
        raise landing_area.DeliveryMismatch(f"batch {manifest.batch_id}: {mismatch}") from mismatch
    if batch.new:
        cost.cpu_seconds += batch.worker_cpu_seconds  # CPU of every process the landing used
        unit.evidence.record_cost(
            run_id=run_id,
            step="land",
            partition_key=load_date,
            cost=cost,
            now=pipeline.now(),
            batch_id=batch.batch_id,
            events=batch.source_events,
            bytes_read=batch.bytes_read,
            rows_written=2 * batch.source_events,
        )
    return batch


def validation_context(pipeline: Pipeline, manifest: Manifest) -> ValidationContext:
    ctx = contract_context(pipeline.settings, pipeline.now(), manifest.source)
    return dataclasses.replace(ctx, seq_low=manifest.seq_low, seq_high=manifest.seq_high)


def contract_context(settings: Settings, now: dt.datetime, source: str) -> ValidationContext:
    """What the contract's per-event rules read from the settings for ``source`` at ``now``:
    the business-date window, the line limit and the source's upcasters."""
    return ValidationContext(
        dt.date.fromisoformat(settings.business_date_start),
        settings.business_date_end(now),
        max_line_bytes=settings.limits.line_bytes,
        upcasters=settings.upcasters.get(source, {}),
    )
