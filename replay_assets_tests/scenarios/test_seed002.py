"""Seed 002 end to end through the Dagster definitions: figures from SPEC 8."""

from pathlib import Path
from typing import Any

import pytest

from replay_assets.demo.scenarios import fixture
from replay_assets.demo.seeds import seed002_demo


@pytest.fixture(scope="module")
def figures(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return seed002_demo(Path(tmp_path_factory.mktemp("seed002")) / "home", lambda _: None)


def test_shuffled_fixture_applies_through_source_order(figures: dict[str, Any]) -> None:
    expected = fixture("seed002_receipts.json")["expected_after_first_day"]
    orders = {o["order_id"]: [o["status"], o["amount_minor"]] for o in figures["first"]["orders"]}
    assert orders == expected["orders"]
    daily = [
        [d["store_id"], d["business_date"], d["order_count"], d["amount_minor"]]
        for d in figures["first"]["daily"]
    ]
    assert daily == expected["daily"]


def test_update_then_delete_is_not_resurrected_by_older_updates(figures: dict[str, Any]) -> None:
    assert figures["late_reconciliation"] == {
        "source_events": 3,
        "accepted": 1,
        "rejected": 0,
        "skipped_duplicate": 1,
        "skipped_stale": 1,
    }
    r2 = next(o for o in figures["final"]["orders"] if o["order_id"] == "r2")
    assert r2["status"] == "deleted" and r2["version"] == 3


def test_late_receipt_restates_its_day_as_version_2_with_version_1_retained(figures: dict[str, Any]) -> None:
    assert figures["versions_2026_10_01"] == [
        {"version": 1, "order_count": 1, "amount_minor": 1000},
        {"version": 2, "order_count": 2, "amount_minor": 1250},
    ]


def test_same_input_replay_leaves_every_publication_hash(figures: dict[str, Any]) -> None:
    assert figures["replay_unchanged"] is True


def test_unbalanced_reconciliation_blocks_publication(figures: dict[str, Any]) -> None:
    u = figures["unbalanced"]
    assert u["runs_failed"] == 1 and u["pointer"] == "2026-10-03"
    assert "reconciliation_adds_up" in u["candidate"][0]["reason"] and u["candidate"][0]["rows_bytes"] > 0
    visible = [
        (d["store_id"], d["business_date"], d["amount_minor"], d["version"])
        for d in figures["final"]["daily"]
    ]
    assert visible == [
        ("s1", "2026-10-01", 1250, 2),
        ("s1", "2026-10-02", 700, 1),
        ("s2", "2026-10-02", 300, 1),
    ]


def test_backfill_over_a_missing_load_date_stays_out_of_view(figures: dict[str, Any]) -> None:
    b = figures["backfill"]
    assert b["statuses"]["2026-10-01"] == "MISSING"
    assert {b["statuses"][d] for d in ("2026-10-02", "2026-10-03", "2026-10-04")} == {"DELAYED"}
    assert b["runs_ok"] == [False, False, False]
    assert b["applied"] == ["2026-09-30"]
    assert b["visible"]["d"] == "2026-09-30"
    first = b["candidates"][0]
    assert first["partition_key"] == "2026-10-02"
    assert "MISSING_UPSTREAM_LOAD_DATE 2026-10-01" in first["reason"]
    assert b["candidate_bytes"] == sum(c["rows_bytes"] for c in b["candidates"]) > 0
