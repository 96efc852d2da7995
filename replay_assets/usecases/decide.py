"""What applies next and why the rest waits: the landing area and the warehouse's facts, planned
by the core (``core/plan.py``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from replay_assets.core.errors import ErrorCode, ReplayError
from replay_assets.core.plan import (
    PROGRESSING,
    DatePlan,
    Delivery,
    WarehouseFacts,
    next_to_apply,
    plan_load_dates,
)
from replay_assets.core.status import DateStatus
from replay_assets.storage.landing import area as landing_area
from replay_assets.storage.unit import WarehouseReader
from replay_assets.usecases.context import Pipeline

# DELAYED is applicable on purpose: a manual or backfill run of a date whose predecessor is not
# certified becomes a failed candidate (MISSING_UPSTREAM_LOAD_DATE), never a silent refusal.
APPLICABLE = frozenset({DateStatus.READY, DateStatus.RESTATE, DateStatus.APPLIED, DateStatus.DELAYED})


@dataclass(frozen=True)
class Decision:
    plans: list[DatePlan]
    next: DatePlan | None
    unreadable: list[str]  # manifests that cannot be read, each naming its file and reason
    parsed: int = 0  # manifests read and parsed to reach it
    # per load date, the keys its failed attempts are recorded under (a run that failed is
    # requested again under a new run key once the date is ready again)
    failed_attempts: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    @property
    def ready(self) -> list[DatePlan]:
        """Every load date that can apply now, in order: each waits only for the one before,
        which comes earlier in the same list (``core/plan.py`` delays everything after a stop)."""
        return [p for p in self.plans if p.status in PROGRESSING]


def decide_with(pipeline: Pipeline, unit: WarehouseReader) -> tuple[Decision, dict[str, landing_area.Seen]]:
    """Readable manifests are kept by their content hash (never by batch id alone: a batch
    id used twice must be seen twice, so the plan can fail the second use closed); an
    unreadable one in a load-date folder is a delivery that is not ready, so its date
    waits instead of applying without it."""
    settings = pipeline.settings
    seen = landing_area.scan_paths(landing_area.manifest_paths(settings.landing), settings.limits)
    deliveries, by_sha = deliveries_of(pipeline, seen)
    facts = unit.apply.warehouse_facts()
    return plan_deliveries(pipeline, facts, seen, deliveries=deliveries, sources=settings.sources), by_sha


def deliveries_of(
    pipeline: Pipeline, seen: list[landing_area.Seen]
) -> tuple[list[Delivery], dict[str, landing_area.Seen]]:
    """The plan's deliveries of what was read, and the readable manifests by content hash."""
    settings = pipeline.settings
    by_sha = {s.manifest.sha256: s for s in seen if s.manifest}
    now = pipeline.now()
    deliveries = [landing_area.to_delivery(s, now, settings.limits) for s in by_sha.values()]
    blocked = (landing_area.unreadable_delivery(s, settings.landing) for s in seen if s.error)
    return deliveries + [d for d in blocked if d is not None], by_sha


def plan_deliveries(
    pipeline: Pipeline,
    facts: WarehouseFacts,
    seen: list[landing_area.Seen],
    deliveries: list[Delivery],
    sources: Mapping[str, str] | None,
) -> Decision:
    landing = pipeline.settings.landing
    unreadable = [f"{s.path.relative_to(landing)}: {s.error}" for s in seen if s.error]
    plans = plan_load_dates(deliveries, facts, load_date_window(pipeline), sources)
    failed: dict[str, tuple[str, ...]] = {}
    for day, key in sorted(facts.blocked):
        failed[day] = (*failed.get(day, ()), key)
    return Decision(plans, next_to_apply(plans), unreadable, parsed=len(seen), failed_attempts=failed)


def load_date_window(pipeline: Pipeline) -> tuple[str, str]:
    """The load dates a delivery may name: the configured start through today."""
    return pipeline.settings.load_date_start, pipeline.now().date().isoformat()


def decide(pipeline: Pipeline, timeout: float | None = None) -> Decision:
    """What applies next and why the rest waits; ``timeout=0`` for sensors (never wait)."""
    with pipeline.store.connect(timeout) as unit:
        return decide_with(pipeline, unit)[0]


def read_horizon(pipeline: Pipeline) -> tuple[Decision, str]:
    """The decision and the newest load date behind the replay horizon ("" for none), from one
    read of the last committed state (no writer lock)."""
    with pipeline.store.read() as unit:
        return decide_with(pipeline, unit)[0], unit.retention.pruned_through()


def plan_for(decision: Decision, load_date: str) -> DatePlan:
    for plan in decision.plans:
        if plan.load_date == load_date:
            return plan
    raise ReplayError(ErrorCode.NOT_READY, f"load date {load_date} has no delivery")
