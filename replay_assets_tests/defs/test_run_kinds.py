"""Every run kind is gated: a run retry (re-execution from failure, a new run id) of a load date
whose candidate fails the gate fails again and publishes nothing."""

from pathlib import Path

import dagster as dg
import pytest

from replay_assets.definitions import build_definitions
from replay_assets.demo.scenarios import seed001
from replay_assets.entrypoints.environment import settings_from_environment
from replay_assets.entrypoints.runner import instance_for
from replay_assets.storage.landing.deliveries import write_delivery
from replay_assets.usecases.context import Pipeline
from replay_assets.usecases.land import land


def apply_job() -> dg.JobDefinition:
    """Module-level, so Dagster can reconstruct the job for a re-execution."""
    return build_definitions(settings_from_environment()).resolve_job_def("apply_load_date_job")


def test_a_run_retry_is_gated_like_the_first_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REPLAY_ASSETS_HOME", str(tmp_path))
    monkeypatch.setenv("REPLAY_ASSETS_NOW", seed001.NOW)
    pipeline = Pipeline(settings_from_environment())
    seed001.deliver_baseline(pipeline.settings.landing)
    write_delivery(
        pipeline.settings.landing, "erp", "2026-09-21", "BROKEN", ['{"event_id": "x"'], "2026-09-21T08:00:00Z"
    )
    instance = instance_for(tmp_path / "dagster")
    job = dg.reconstructable(apply_job)
    assert dg.execute_job(job, instance, tags={"dagster/partition": "2026-09-20"}).success
    land(pipeline, "2026-09-21")
    with pipeline.warehouse.transaction() as con:
        con.execute("DELETE FROM rejected_events WHERE batch_id = 'BROKEN'")
    first = dg.execute_job(job, instance, tags={"dagster/partition": "2026-09-21"}, raise_on_error=False)
    assert not first.success
    options = dg.ReexecutionOptions.from_failure(first.run_id, instance)
    retry = dg.execute_job(job, instance, reexecution_options=options, raise_on_error=False)
    assert not retry.success and retry.run_id != first.run_id
    assert instance.get_run_by_id(retry.run_id).parent_run_id == first.run_id
    with pipeline.warehouse.connect() as con:
        assert con.execute("SELECT value FROM pointers").fetchall() == [("2026-09-20",)]
        assert (
            con.execute("SELECT count(*) FROM candidates WHERE partition_key = '2026-09-21'").fetchall()[0][0]
            >= 1
        )
    instance.dispose()
