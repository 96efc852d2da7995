"""An operator's decision on a batch that blocks its load date, audited with who and why.

- ``skip``: the date applies without the batch. A batch that blocks nothing is refused: skipping
  a healthy batch would apply its load date without its events. A late batch on a sealed date
  whose chain it blocked (``core/blame.py``) is skipped the same way: the date keeps the input
  it was certified with, and later dates proceed.
- ``reland``: a batch the schema gate blocked is landed again under the current settings — after
  an upcaster for its ``schema_version`` was declared (``core/upcast.py``). Its landed rows are
  removed and the next run lands the same verified files again; the blocked attempt stays in
  ``load_date_attempts`` and the relanding in ``batch_relandings``. A version still undeclared
  blocks the date again, exactly as before."""

from __future__ import annotations

from replay_assets.core.blame import blames_late, names_batch
from replay_assets.core.errors import ErrorCode, ReplayError
from replay_assets.core.plan import DatePlan
from replay_assets.core.status import DateStatus, PartitionStatus
from replay_assets.storage.unit import WarehouseReader
from replay_assets.usecases.context import Pipeline
from replay_assets.usecases.decide import decide_with, plan_for


def reland(pipeline: Pipeline, batch_id: str, note: str, operator: str) -> str:
    """Remove the landed rows of a batch the schema gate blocked so the next run lands it again
    under today's upcasters; returns its load date. Refused for any other batch."""
    with pipeline.store.transaction() as unit:
        known = unit.landing.landed_batch(batch_id)
        if not known:
            raise ReplayError(ErrorCode.UNKNOWN_BATCH, f"no landed batch with batch id {batch_id}")
        day, manifest_sha = known
        decision, _ = decide_with(pipeline, unit)
        plan = plan_for(decision, day)
        gated = unit.landing.schema_gated(batch_id)
        if plan.status is not DateStatus.BLOCKED or not gated:
            raise ReplayError(
                ErrorCode.USAGE,
                f"batch {batch_id} is not blocked by the schema gate (load date {day} is {plan.status}); "
                "only such a batch can be landed again",
            )
        now = pipeline.now()
        unit.landing.record_relanding(
            batch_id, day, manifest_sha, violations=gated, note=note, operator=operator, now=now
        )
        # the newest attempt of this input: ready again (a new block will follow it)
        unit.evidence.insert_attempt(
            day,
            plan.identity,
            status=DateStatus.READY.value,
            reason=f"batch {batch_id} to be landed again",
            now=now,
        )
        return day


def resolve(pipeline: Pipeline, batch_id: str, note: str, operator: str) -> None:
    with pipeline.store.transaction() as unit:
        decision, _ = decide_with(pipeline, unit)
        delivered = {d.load_date for p in decision.plans for d in p.batches if d.batch_id == batch_id}
        known = unit.landing.landed_batch(batch_id)
        if not delivered and not known:
            raise ReplayError(ErrorCode.UNKNOWN_BATCH, f"no delivery with batch id {batch_id}")
        days = sorted(delivered | ({known[0]} if known else set()))
        plans = [plan_for(decision, day) for day in days]
        blocked = [plan.load_date for plan in plans if _blocks(unit, plan, batch_id)]
        if not blocked:
            states = ", ".join(f"{p.load_date} {p.status}" for p in plans)
            raise ReplayError(
                ErrorCode.USAGE,
                f"batch {batch_id} does not block its load date ({states}); only a batch that "
                "blocks a BLOCKED or BLOCKED_UPSTREAM load date can be skipped",
            )
        now = pipeline.now()
        unit.landing.record_skip(batch_id, note=note, operator=operator, now=now)
        # a late batch skipped on a sealed date: the date is back on the input it was certified
        # with, and nothing will apply it again to say so
        after, _ = decide_with(pipeline, unit)
        for day in blocked:
            if plan_for(after, day).status is DateStatus.APPLIED:
                reason = f"batch {batch_id} skipped: the input this load date was certified with stands"
                unit.evidence.set_status(
                    "current_orders", keys=[day], status=PartitionStatus.CERTIFIED, reason=reason, now=now
                )


def _blocks(unit: WarehouseReader, plan: DatePlan, batch_id: str) -> bool:
    """Whether ``batch_id`` is what blocks ``plan``'s load date: a contract violation of its
    own, a late batch whose chain it blocked, or its delivery is the one not ready (the last
    two named by the reason, ``core/blame.py``)."""
    if plan.status is DateStatus.BLOCKED:
        own = unit.landing.violated_on(batch_id, plan.load_date) or blames_late(plan.reason, batch_id)
        return own and batch_id in {d.batch_id for d in plan.batches}
    if plan.status is DateStatus.BLOCKED_UPSTREAM:
        named = names_batch(plan.reason, batch_id)
        return any(d.batch_id == batch_id and (d.not_ready or named) for d in plan.batches)
    return False
