"""Which load date applies next, and why the others wait. Pure.

The load date is the unit of application. A date applies once every configured source has a
ready delivery for it and every earlier date is applied; otherwise it is reported with the
reason (BLOCKED_UPSTREAM, MISSING, BLOCKED, DELAYED, LATE_DELIVERY).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from replay_assets.core import retention
from replay_assets.core.errors import ErrorCode
from replay_assets.core.events import canonical_json, sha256_text
from replay_assets.core.status import WAITING_PARTITION_STATUS, DateStatus

PROBLEMS = frozenset(
    {
        DateStatus.BLOCKED,
        DateStatus.BLOCKED_UPSTREAM,
        DateStatus.MISSING,
        DateStatus.DELAYED,
        DateStatus.LATE_DELIVERY,
        DateStatus.OUT_OF_RANGE,
        DateStatus.FAILED_CANDIDATE,
    }
)
PROGRESSING = frozenset({DateStatus.READY, DateStatus.RESTATE})
STOPPING = frozenset(
    {
        DateStatus.WAITING,
        DateStatus.BLOCKED_UPSTREAM,
        DateStatus.MISSING,
        DateStatus.BLOCKED,
        DateStatus.FAILED_CANDIDATE,
    }
)


@dataclass(frozen=True)
class Delivery:
    """A manifest seen in the landing area, with its cheap readiness verdict."""

    source: str
    batch_id: str
    load_date: str
    manifest_sha256: str
    ready_at: str
    not_ready: str | None = None
    supersedes: tuple[str, ...] = ()
    fingerprint: str = ""  # cheap facts of its files (size, mtime): changes when a file is replaced


@dataclass(frozen=True)
class WarehouseFacts:
    """What the warehouse knows: applied identities, blocked inputs, skipped and landed batches."""

    applied: Mapping[str, str] = field(default_factory=dict)
    blocked: Mapping[tuple[str, str], tuple[DateStatus, str]] = field(default_factory=dict)
    skipped: frozenset[str] = frozenset()
    landed: Mapping[str, str] = field(default_factory=dict)
    pointer: str = ""  # the newest certified load date: a failed gate is retried once it moves
    pruned_through: str = ""  # the newest load date behind the replay horizon (core/retention.py)
    counted: frozenset[str] = frozenset()  # batches an application of their load date counted


@dataclass(frozen=True)
class DatePlan:
    load_date: str
    status: DateStatus
    reason: str
    identity: str
    batches: tuple[Delivery, ...]
    attempt_key: str = ""  # identity + file fingerprints: a failed verification is keyed by it
    gate_key: str = ""  # attempt key + the certified pointer: a failed gate is keyed by it
    late: tuple[Delivery, ...] = ()  # of an applied date: its batches that application never counted

    @property
    def problem(self) -> bool:
        """Something an operator must hear about (``run`` exits 1)."""
        return self.status in PROBLEMS or "REPLAY_BATCH_ID_REUSED" in self.reason


def input_identity(batches: Sequence[Delivery]) -> str:
    """Identity of a load date's input: the sorted manifest hashes of its active batches."""
    parts = sorted((b.source, b.batch_id, b.manifest_sha256) for b in batches)
    return sha256_text(canonical_json(parts))


def days(first: str, last: str) -> list[str]:
    start, end = dt.date.fromisoformat(first), dt.date.fromisoformat(last)
    return [(start + dt.timedelta(n)).isoformat() for n in range((end - start).days + 1)]


def plan_load_dates(
    deliveries: Sequence[Delivery],
    facts: WarehouseFacts,
    window: tuple[str, str],
    sources: Mapping[str, str] | None = None,
) -> list[DatePlan]:
    """The status of every load date from the first source start to the last delivered date."""
    inside = [d for d in deliveries if window[0] <= d.load_date <= window[1]]
    outside = [
        DatePlan(
            d.load_date,
            DateStatus.OUT_OF_RANGE,
            reason=f"load date of batch {d.batch_id} outside {window[0]}..{window[1]}",
            identity="",
            batches=(d,),
        )
        for d in deliveries
        if not window[0] <= d.load_date <= window[1]
    ]
    starts = dict(sources) if sources is not None else _derived_starts(inside)
    if not inside or not starts:
        return outside
    last = max(d.load_date for d in inside)
    superseded = {b for d in inside for b in d.supersedes}
    latest = max(facts.applied, default="")
    owners = batch_owners(deliveries, facts.landed)
    plans = [
        _plan_date(
            day,
            inside,
            facts=facts,
            owners=owners,
            starts=starts,
            superseded=superseded,
            latest=latest,
            last=last,
        )
        for day in days(min(starts.values()), last)
    ]
    return _progress(plans) + outside


def batch_owners(deliveries: Sequence[Delivery], landed: Mapping[str, str]) -> dict[str, Delivery | str]:
    """Which delivery owns each batch id: the one landed before (its manifest hash), else the
    first by (load date, ready_at, source). A batch id is unique across sources and load dates,
    so every other delivery under the same id is a reuse that fails closed; none replaces or
    hides the owner."""
    owners: dict[str, Delivery | str] = dict(landed)
    for d in sorted(deliveries, key=lambda d: (d.load_date, d.ready_at, d.source)):
        owners.setdefault(d.batch_id, d)
    return owners


def _owned(d: Delivery, owners: Mapping[str, Delivery | str]) -> bool:
    owner = owners[d.batch_id]
    return (owner if isinstance(owner, str) else owner.manifest_sha256) == d.manifest_sha256


def _reuse_reason(d: Delivery, owners: Mapping[str, Delivery | str]) -> str:
    owner = owners[d.batch_id]
    held = (
        "a delivery landed before with other content"
        if isinstance(owner, str)
        else f"source {owner.source} for load date {owner.load_date}"
    )
    return (
        f"REPLAY_BATCH_ID_REUSED: batch {d.batch_id} of source {d.source} for load date "
        f"{d.load_date} reuses a batch id held by {held}; nothing of it applies"
    )


def _derived_starts(deliveries: Sequence[Delivery]) -> dict[str, str]:
    starts: dict[str, str] = {}
    for d in deliveries:
        starts[d.source] = min(starts.get(d.source, d.load_date), d.load_date)
    return starts


def _plan_date(
    day: str,
    deliveries: Sequence[Delivery],
    facts: WarehouseFacts,
    owners: Mapping[str, Delivery | str],
    starts: Mapping[str, str],
    superseded: set[str],
    latest: str,
    last: str,
) -> DatePlan:
    of_day = [d for d in deliveries if d.load_date == day]
    reused = [d for d in of_day if not _owned(d, owners)]
    active = tuple(
        sorted(
            (
                d
                for d in of_day
                if d.batch_id not in facts.skipped and d.batch_id not in superseded and d not in reused
            ),
            key=lambda d: (d.ready_at, d.batch_id),
        )
    )
    identity = input_identity(active)
    attempt_key = sha256_text(canonical_json([identity, sorted(d.fingerprint for d in active)]))
    not_ready = [d for d in active if d.not_ready]
    missing = sorted(s for s, start in starts.items() if start <= day)
    delivered = {d.source for d in of_day if d not in reused}  # a skipped batch was delivered
    missing = [s for s in missing if s not in delivered]
    gate_key = sha256_text(canonical_json([attempt_key, facts.pointer]))
    blocked = next(
        (facts.blocked[(day, k)] for k in (identity, attempt_key, gate_key) if (day, k) in facts.blocked),
        None,
    )
    reuse = _reuse_reason(reused[0], owners) if reused else ""
    status, reason = _status(
        day,
        identity,
        facts=facts,
        latest=latest,
        last=last,
        reuse=reuse,
        not_ready=not_ready,
        missing=missing,
        blocked=blocked,
    )
    return DatePlan(
        day,
        status,
        reason=reason,
        identity=identity,
        batches=active,
        attempt_key=attempt_key,
        gate_key=gate_key,
        late=tuple(d for d in active if d.batch_id not in facts.counted) if day in facts.applied else (),
    )


def _status(
    day: str,
    identity: str,
    facts: WarehouseFacts,
    latest: str,
    last: str,
    reuse: str,
    not_ready: list[Delivery],
    missing: list[str],
    blocked: tuple[DateStatus, str] | None,
) -> tuple[DateStatus, str]:
    if day in facts.applied:
        if facts.applied[day] == identity or not_ready or missing:
            note = f"new delivery not ready: {not_ready[0].not_ready}" if not_ready else ""
            return DateStatus.APPLIED, reuse or note
        if blocked is not None:
            return blocked
        behind = retention.refusal(day, facts.pruned_through, "a new delivery")
        if behind:  # reported and never applied: the input a re-application needs is gone
            return DateStatus.LATE_DELIVERY, f"{ErrorCode.BEHIND_HORIZON}: {behind}"
        if day == latest:
            return DateStatus.RESTATE, "a new delivery for the latest applied load date"
        return DateStatus.LATE_DELIVERY, (
            "REPLAY_LOAD_DATE_SEALED: a new delivery for a load date that later dates already "
            f"built on; backfill --from {day} --to {latest} in the backfill lane"
        )
    if reuse:
        return DateStatus.BLOCKED, reuse
    if blocked is not None:
        return blocked
    if not_ready:
        d = not_ready[0]
        return DateStatus.BLOCKED_UPSTREAM, f"batch {d.batch_id} of {d.source}: {d.not_ready}"
    if missing:
        if day < last:
            return DateStatus.MISSING, f"no manifest from source {missing[0]} for {day}"
        return DateStatus.WAITING, f"waiting for source {missing[0]}"
    return DateStatus.READY, ""


def _progress(plans: list[DatePlan]) -> list[DatePlan]:
    """Dates wait behind the first one that cannot apply: READY after a stop becomes DELAYED."""
    out: list[DatePlan] = []
    stopped_at: str | None = None
    for plan in plans:
        if stopped_at is not None and plan.status in PROGRESSING:
            plan = replace(plan, status=DateStatus.DELAYED, reason=f"waiting behind load date {stopped_at}")
        elif stopped_at is None and plan.status in STOPPING:
            stopped_at = plan.load_date
        out.append(plan)
    return out


def next_to_apply(plans: Sequence[DatePlan]) -> DatePlan | None:
    """The one load date to apply now (never D before D-1), or None."""
    for plan in plans:
        if plan.status in PROGRESSING:
            return plan
        if plan.status in STOPPING or plan.status is DateStatus.DELAYED:
            return None
    return None


def with_waiting_statuses(
    rows: Sequence[Mapping[str, object]], plans: Sequence[DatePlan], now: dt.datetime
) -> list[dict[str, object]]:
    """``partition_status`` rows as recording the plans' waiting statuses would leave them (what
    ``run`` records), computed without writing, so ``status`` shows the live state read-only.
    A waiting date's status, reason and time replace the stored ones; its last good version stays."""
    by_key = {(str(r["asset"]), str(r["partition_key"])): dict(r) for r in rows}
    for plan in plans:
        if plan.status not in WAITING_PARTITION_STATUS:
            continue
        key = ("current_orders", plan.load_date)
        row = by_key.get(key) or {
            "asset": key[0],
            "partition_key": key[1],
            "status": None,
            "reason": None,
            "last_good_version": None,
            "last_good_sha256": None,
            "updated_at": None,
        }
        row.update(status=WAITING_PARTITION_STATUS[plan.status].value, reason=plan.reason, updated_at=now)
        by_key[key] = row
    return [by_key[key] for key in sorted(by_key)]


def late_delivery_range(plans: Sequence[DatePlan], pruned_through: str = "") -> tuple[str, str] | None:
    """The load dates a backfill must cover while a late delivery waits on a sealed date: from the
    earliest such date to the latest applied one (each is re-applied on the one before). None when
    no late delivery waits. A late delivery behind the horizon can never be applied: not counted."""
    late = [
        p.load_date
        for p in plans
        if p.status is DateStatus.LATE_DELIVERY and not retention.behind_horizon(p.load_date, pruned_through)
    ]
    if not late:
        return None
    applied = [p.load_date for p in plans if p.status in (DateStatus.APPLIED, DateStatus.LATE_DELIVERY)]
    return min(late), max(applied)


def refuse_partial_backfill(
    plans: Sequence[DatePlan], first: str, last: str, pruned_through: str = ""
) -> str | None:
    """Why a load-date backfill of ``first..last`` must be refused before anything mutates, or
    None: while a late delivery waits (one behind the horizon never can), a range that starts
    after its date or stops before the latest applied date would re-apply part of the chain."""
    needed = late_delivery_range(plans, pruned_through)
    if needed is None or (first <= needed[0] and last >= needed[1]):
        return None
    return (
        f"load date {needed[0]} has a late delivery and later dates built on it: the backfill must "
        f"re-apply {needed[0]}..{needed[1]} in order (--from {needed[0]} --to {needed[1]}), "
        f"not {first}..{last}"
    )
