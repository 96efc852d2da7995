"""Seed 001 end to end through the Dagster definitions: figures from SPEC 8."""

from pathlib import Path
from typing import Any

import pytest

from replay_assets.demo.seeds import seed001_demo


@pytest.fixture(scope="module")
def figures(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return seed001_demo(Path(tmp_path_factory.mktemp("seed001")) / "home", lambda _: None)


def test_baseline_controls_at_watermark_200(figures: dict[str, Any]) -> None:
    assert figures["baseline_controls"] == (8, 5, 10, 690, 425, 265)
    assert figures["baseline_watermark"] == 200


def test_crash_inside_the_load_leaves_the_baseline(figures: dict[str, Any]) -> None:
    assert figures["crash_exit"] == -9
    assert figures["after_crash"] == ("2026-09-20", 200)


def test_final_controls_watermark_customer_and_tombstone(figures: dict[str, Any]) -> None:
    assert figures["final_controls"] == (9, 7, 11, 740, 450, 290)
    assert figures["final_watermark"] == 206
    assert figures["customer"] == {"segment": "Growth", "version": 203}
    assert figures["tombstones"] == [{"order_id": "O1005", "line_no": 2, "version": 204}]
    assert figures["reconciliation"] == {
        "source_events": 8,
        "accepted": 6,
        "rejected": 0,
        "skipped_duplicate": 2,
        "skipped_stale": 0,
    }


def test_rerun_and_resolved_schema_gate_leave_the_hash(figures: dict[str, Any]) -> None:
    assert figures["rerun_sha256"] == figures["final_sha256"] != figures["baseline_sha256"]
    assert figures["blocked"][0]["status"] == "BLOCKED"
    assert "schema_version" in figures["blocked"][0]["reason"]
    assert figures["blocked_runs_failed"] == 1
    assert figures["resolved_sha256"] == figures["final_sha256"]


def test_shuffled_across_batches_gives_the_same_state(figures: dict[str, Any]) -> None:
    assert figures["shuffled_sha256"] == figures["final_sha256"]
