"""Seed 003 end to end through the Dagster definitions: the failed daily load and its runbook
(SPEC 8, seed 003), with the injected clock of the seed's timeline."""

from pathlib import Path
from typing import Any

import pytest

from replay_assets.demo.scenarios import fixture
from replay_assets.demo.seed003 import seed003_demo

CURRENT_CONTROLS = (9, 7, 11, 740, 450, 290)


@pytest.fixture(scope="module")
def figures(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return seed003_demo(Path(tmp_path_factory.mktemp("seed003")) / "home", lambda _: None)


def test_a_run_before_ready_at_is_blocked_upstream_and_publishes_nothing(figures: dict[str, Any]) -> None:
    blocked = figures["blocked"]
    assert blocked["runs"] == 0 and blocked["status"] == "BLOCKED_UPSTREAM"
    assert "ATLAS-20260921.manifest.json" in blocked["reason"] and "in the future" in blocked["reason"]
    assert blocked["published_nothing"]


def test_a_transform_failing_once_is_retried_and_applies_once(figures: dict[str, Any]) -> None:
    retried = figures["retried"]
    assert all(retried["runs_ok"])
    assert retried["dagster_trace"] == ["STEP_START", "STEP_UP_FOR_RETRY", "STEP_RESTARTED", "STEP_SUCCESS"]
    assert [(a[2], a[3], a[4]) for a in retried["attempts"]] == [
        (0, "STARTED", ""),
        (0, "FAILED", "TransientFault"),
        (1, "STARTED", ""),
        (1, "SUCCEEDED", ""),
    ]
    assert retried["apply_operations"] == [{"state": "COMPLETE"}]
    assert retried["controls"] == CURRENT_CONTROLS


def test_the_certified_current_partition_meets_its_slos_with_the_seed_figures(
    figures: dict[str, Any],
) -> None:
    slo = figures["retried"]["slo"]
    assert (
        slo["freshness_minutes"],
        slo["completeness_pct"],
        slo["duration_minutes"],
        slo["availability_minutes"],
    ) == (6, 100, 6, 18)
    assert slo["all_met"]


def test_reverification_marks_the_corrupted_historical_publication_suspect(figures: dict[str, Any]) -> None:
    suspect = figures["suspect"]
    assert suspect["checks_passed"] == {"current_orders": False, "daily_aggregates": True}
    assert suspect["status"]["status"] == "SUSPECT"
    broken = tuple(fixture("seed003_corrupted_historical.json")["broken_controls"])
    assert str(broken) in suspect["status"]["reason"]


def test_a_backfill_of_that_partition_repairs_it_and_leaves_the_current_hash(figures: dict[str, Any]) -> None:
    repair = figures["repair"]
    assert repair["runs_ok"] == [True] and repair["lane"] == "backfill"
    assert repair["controls"] == tuple(fixture("seed003_corrupted_historical.json")["repaired_controls"])
    assert repair["status"]["status"] == "RESTATED" and repair["status"]["last_good_version"] == 2
    assert repair["current_unchanged"]
    versions = [(p["partition_key"], p["version"]) for p in figures["publications"]]
    assert versions == [("2026-09-20", 1), ("2026-09-20", 2), ("2026-09-21", 1)]
    assert figures["publications"][1]["reason"].startswith("repaired:")


def test_a_replay_changes_nothing(figures: dict[str, Any]) -> None:
    replay = figures["replay"]
    assert replay["redelivery_runs"] == 0 and replay["rematerialized_ok"]
    assert replay["current_unchanged"] and replay["final_controls"] == CURRENT_CONTROLS


def test_the_consumer_update_says_what_changed_in_consumer_terms(figures: dict[str, Any]) -> None:
    text = "\n".join(figures["update"])
    assert "current_orders 2026-09-20: RESTATED" in text
    assert "last good version: version 2" in text and "restated: yes" in text
    assert "what happens next:" in text
    assert "consumers currently see load date 2026-09-21" in text


def test_the_daily_partitions_it_fed_carry_service_levels_on_the_seed_clock(figures: dict[str, Any]) -> None:
    """Run B's apply certified at 08:18 and its restatement published the aggregates on that clock:
    each business date 2026-09-21 fed is measured on it (ready 08:12, the run from 08:12,
    expected 08:00)."""
    daily = figures["retried"]["daily_slos"]
    assert sorted(daily) == ["2026-09-17", "2026-09-18", "2026-09-19", "2026-09-20", "2026-09-21"]
    for found in daily.values():
        assert found["load_date"] == "2026-09-21" and found["asset"] == "daily_aggregates"
        measured = (
            found["freshness_minutes"],
            found["completeness_pct"],
            found["duration_minutes"],
            found["availability_minutes"],
        )
        assert measured == (6, 100, 6, 18) and found["all_met"]
    assert any(
        "daily_aggregates 2026-09-20 (last fed by load date 2026-09-21)" in line for line in figures["update"]
    )
