"""Service levels of daily_aggregates partitions (SPEC 7, issue 15 item 1): each business date is
measured on the newest load date that fed it, over the manifests of every load date that did."""

from __future__ import annotations

from pathlib import Path

import pytest

from replay_assets.core.config import SloPolicy
from replay_assets.core.errors import ErrorCode, ReplayError
from replay_assets.usecases.context import Pipeline
from replay_assets.usecases.operations import Operations
from replay_assets.usecases.resolve import resolve
from replay_assets_tests.helpers import drive, settings_for
from replay_assets_tests.storage.test_bad_input import deliver, event

POLICY = SloPolicy(freshness_minutes=25, expected_time="06:00")
D1, D2, D3 = "2026-01-01", "2026-01-02", "2026-01-03"
B1, B2 = "2026-01-01", "2026-01-02"


def at(home: Path, now: str) -> Pipeline:
    return Pipeline(settings_for(home, now, slo=POLICY))


def figures(p: Pipeline) -> dict[str, tuple[str, float, float, float | None, float, bool]]:
    _, _, slos = Operations(p).status_report()
    out = {}
    for (asset, key), found in slos.items():
        slo = found.slo
        if asset == "daily_aggregates":
            minutes = (
                slo.freshness_minutes,
                slo.completeness_pct,
                slo.duration_minutes,
                slo.availability_minutes,
            )
            out[key] = (found.load_date, *minutes, slo.freshness_met)
    return out


def test_each_business_date_is_measured_on_the_newest_load_date_that_fed_it(tmp_path: Path) -> None:
    first = at(tmp_path, f"{D1}T06:30:00Z")
    deliver(first, D1, "b1", [event(1, "o1", business_date=B1), event(2, "o2", business_date=B2)])
    drive(first)
    assert figures(first) == {
        B1: (D1, 30.0, 100.0, None, 30.0, False),  # ready 06:00, certified 06:30, expected 06:00
        B2: (D1, 30.0, 100.0, None, 30.0, False),
    }
    second = at(tmp_path, f"{D2}T07:20:00Z")
    deliver(second, D2, "b2", [event(3, "o2", business_date=B2, amount_minor=70)], ready_at=f"{D2}T07:00:00Z")
    drive(second)
    assert figures(second) == {
        B1: (D1, 30.0, 100.0, None, 30.0, False),  # not fed by D2: unchanged
        B2: (D2, 20.0, 100.0, None, 80.0, True),  # D2's ready 07:00 and expected 06:00
    }
    update = Operations(second).consumer_update(B2)
    assert any(
        line.startswith(
            f"daily_aggregates {B2} (last fed by load date {D2}) service levels: freshness 20 min"
        )
        for line in update
    )


def test_a_skipped_batch_makes_the_dates_it_fed_incomplete(tmp_path: Path) -> None:
    p = at(tmp_path, f"{D3}T06:10:00Z")
    deliver(p, D1, "b1", [event(1, "o1", business_date=B1), event(2, "o2", business_date=B2)])
    deliver(p, D2, "b2", [event(3, "o2", business_date=B2, amount_minor=70)])
    deliver(p, D3, "ok", [event(4, "o1", business_date=B1, amount_minor=90)])
    deliver(p, D3, "bad", [event(5, "o3", business_date=B1, schema_version=2)])
    with pytest.raises(ReplayError) as blocked:
        drive(p)
    assert blocked.value.code is ErrorCode.BATCH_BLOCKED
    resolve(p, "bad", "producer on v2, skipped", "ops")
    drive(p)
    found = figures(p)
    assert found[B1][:3] == (D3, 10.0, 75.0)  # D1's 2 events and D3's 2 declared, 1 of them skipped
    assert found[B2][:3] == (D2, 1450.0, 100.0)  # fed by D1 and D2 only: D2 ready a day before
