"""Cost evidence of the publish step (SPEC 7): the temporary storage failed candidates keep."""

import datetime as dt
from pathlib import Path

import pytest

from replay_assets.demo.scenarios import seed001
from replay_assets.usecases.apply import apply
from replay_assets.usecases.context import Pipeline
from replay_assets.usecases.land import land
from replay_assets.usecases.operations import Operations
from replay_assets.usecases.publish import pending_restatements, publish
from replay_assets_tests.helpers import settings_for


def _dates(start: str, end: str) -> list[str]:
    first, last = dt.date.fromisoformat(start), dt.date.fromisoformat(end)
    return [(first + dt.timedelta(n)).isoformat() for n in range((last - first).days + 1)]


def test_failed_aggregate_candidates_count_their_bytes_in_the_publish_cost(tmp_path: Path) -> None:
    pipeline = Pipeline(settings_for(tmp_path, seed001.NOW))
    seed001.deliver_baseline(pipeline.settings.landing)
    land(pipeline, seed001.BASELINE_DATE)
    apply(pipeline, seed001.BASELINE_DATE, "run-apply")
    with pipeline.warehouse.transaction() as con:  # evidence that no longer adds up
        con.execute(
            "UPDATE reconciliation SET accepted = accepted - 1 WHERE load_date = ?", [seed001.BASELINE_DATE]
        )
    [(start, end)], _ = pending_restatements(pipeline)
    published = publish(pipeline, _dates(start, end), "run-publish")
    assert published and not any(p.certified for p in published)
    kept = sum(f.stat().st_size for f in (tmp_path / "candidates" / "daily_aggregates").rglob("*.parquet"))
    with pipeline.warehouse.connect() as con:
        recorded = con.execute(
            "SELECT sum(rows_bytes) FROM candidates WHERE asset = 'daily_aggregates'"
        ).fetchall()
        costs = con.execute(
            "SELECT partition_key, candidate_bytes FROM costs WHERE step = 'publish' AND run_id = ?",
            ["run-publish"],
        ).fetchall()
    assert recorded == [(kept,)] and kept > 0
    assert costs == [(f"{start}..{end}", kept)]
    assert Operations(pipeline).run_costs("run-publish", "publish")["candidate_bytes"] == kept


def test_cost_per_batch_measures_landing_and_apportions_the_load_dates_apply(tmp_path: Path) -> None:
    """Two batches of one load date: each its own landing cost and rows, and the date's one
    set-based application shared by source events (the only basis the evidence has)."""
    from replay_assets_tests.storage.test_bad_input import deliver, event

    pipeline = Pipeline(settings_for(tmp_path, "2026-01-10T12:00:00Z"))
    day = "2026-01-01"
    deliver(pipeline, day, "big", [event(1, "o1"), event(2, "o2"), event(3, "o3"), event(3, "o3")])
    deliver(pipeline, day, "small", [event(4, "o4")], ready_at=f"{day}T07:00:00Z")
    land(pipeline, day)
    apply(pipeline, day, "run-apply")
    rows = {r["batch_id"]: r for r in Operations(pipeline).status_report()[1]["batch_costs"]}
    with pipeline.warehouse.connect() as con:
        [(cpu, wall)] = con.execute(
            "SELECT cpu_seconds, wall_seconds FROM costs WHERE step = 'apply'"
        ).fetchall()
        landing = dict(con.execute("SELECT batch_id, cpu_seconds FROM costs WHERE step = 'land'").fetchall())
    big, small = rows["big"], rows["small"]
    assert (big["source_events"], big["accepted"], big["skipped_duplicate"]) == (4, 3, 1)
    assert (big["rows_written"], small["rows_written"]) == (2 * 4 + 3, 2 * 1 + 1)
    assert big["land_cpu_seconds"] == round(landing["big"], 6) and small["land_cpu_seconds"] == round(
        landing["small"], 6
    )
    assert big["apply_cpu_seconds"] == round(cpu * 4 / 5, 6) and small["apply_cpu_seconds"] == round(
        cpu / 5, 6
    )
    assert big["apply_wall_seconds"] + small["apply_wall_seconds"] == pytest.approx(wall, abs=2e-6)
    assert big["apply_basis"] == "share of its load date by source events"
