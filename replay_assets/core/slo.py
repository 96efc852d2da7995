"""Service levels of a certified partition (SPEC 7) — pure arithmetic over recorded instants.

freshness    = certified_at - ready_at of the newest contributing manifest (time blocked upstream
               after the source said it was ready counts against it);
completeness = share of the events the manifests declared that were applied (a batch skipped by
               an operator is declared, not applied), in percent;
duration     = certified_at - start of the run that certified it;
availability = certified_at - the configured expected time of the load date.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import asdict, dataclass

from replay_assets.core.config import SloPolicy


@dataclass(frozen=True)
class Slo:
    freshness_minutes: float
    completeness_pct: float
    duration_minutes: float | None  # None when the run's start was not recorded
    availability_minutes: float
    freshness_met: bool
    completeness_met: bool
    duration_met: bool | None
    availability_met: bool

    @property
    def all_met(self) -> bool:
        return all(
            met is not False
            for met in (self.freshness_met, self.completeness_met, self.duration_met, self.availability_met)
        )

    def to_record(self) -> dict[str, object]:
        return {**asdict(self), "all_met": self.all_met}


def _minutes(later: dt.datetime, earlier: dt.datetime) -> float:
    return round((later - earlier).total_seconds() / 60, 2)


def evaluate(
    policy: SloPolicy,
    load_date: str,
    certified_at: dt.datetime,
    ready_at: dt.datetime,
    run_started_at: dt.datetime | None,
    declared_events: int,
    landed_events: int,
) -> Slo:
    freshness = _minutes(certified_at, ready_at)
    completeness = (
        100.0
        if declared_events == 0
        else round(100 * min(landed_events, declared_events) / declared_events, 2)
    )
    duration = _minutes(certified_at, run_started_at) if run_started_at is not None else None
    availability = _minutes(certified_at, policy.expected_at(load_date))
    return Slo(
        freshness,
        completeness,
        duration_minutes=duration,
        availability_minutes=availability,
        freshness_met=freshness <= policy.freshness_minutes,
        completeness_met=completeness >= policy.completeness_pct,
        duration_met=None if duration is None else duration <= policy.duration_minutes,
        availability_met=availability <= policy.availability_minutes,
    )
