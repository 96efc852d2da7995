"""Service levels of a certified partition — pure arithmetic over recorded instants.

For a load date of ``current_orders``: its first certification. For a business date of
``daily_aggregates``: the certification of the aggregates after the newest load date that fed it
(a load date feeds the business dates whose groups it queued), over the manifests of every load
date that fed it; duration counts from the start of the run that applied that newest load date,
availability from its expected time.

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


@dataclass(frozen=True)
class PartitionSlo:
    """The service levels of one partition of an asset, and the load date they are measured on
    (the partition itself for ``current_orders``; the newest that fed it for ``daily_aggregates``)."""

    asset: str
    partition_key: str
    load_date: str
    slo: Slo

    def to_record(self) -> dict[str, object]:
        where = {"asset": self.asset, "partition_key": self.partition_key, "load_date": self.load_date}
        return where | self.slo.to_record()


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


Slos = dict[tuple[str, str], PartitionSlo]  # (asset, partition) -> its service levels
