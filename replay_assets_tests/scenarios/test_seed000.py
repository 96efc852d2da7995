"""Seed 000 end to end through the Dagster definitions: figures from SPEC 8."""

from pathlib import Path
from typing import Any

import pytest

from replay_assets.demo.scenarios import fixture
from replay_assets.demo.seeds import seed000_demo


@pytest.fixture(scope="module")
def figures(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    lines: list[str] = []
    result = seed000_demo(Path(tmp_path_factory.mktemp("seed000")), lines.append)
    result["printed"] = "\n".join(lines)
    return result


def test_final_orders_and_daily_rows_equal_the_seed_rebuild(figures: dict[str, Any]) -> None:
    expected = fixture("seed000_expected_final.json")
    assert figures["orders"] == expected["orders"]
    assert figures["daily"] == expected["daily"]


def test_kill_after_state_commit_leaves_old_and_new_groups_queued(figures: dict[str, Any]) -> None:
    assert figures["killed_exit"] == -9
    queued = {(q["store_id"], q["business_date"]) for q in figures["queued"]}
    # a moved north -> south/01-02, b cancelled in north/01-01, c deleted from south/01-01
    assert queued == {("north", "2026-01-01"), ("south", "2026-01-01"), ("south", "2026-01-02")}


def test_replaying_the_last_batch_changes_nothing(figures: dict[str, Any]) -> None:
    assert figures["replay_runs"] == 0
    before, after = figures["publications"]
    assert before == after


def test_demo_prints_the_tables(figures: dict[str, Any]) -> None:
    assert "equals the seed's independent rebuild: True" in figures["printed"]
