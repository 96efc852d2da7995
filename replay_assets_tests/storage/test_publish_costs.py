"""Cost evidence of the publish step (SPEC 7): the temporary storage failed candidates keep."""

import datetime as dt
from pathlib import Path

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
