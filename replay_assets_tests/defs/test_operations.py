"""Operations through the Dagster definitions: readiness, lanes, fail-once retries (SPEC 4, 7)."""

import datetime as dt
import logging
from contextlib import ExitStack
from pathlib import Path

import dagster as dg

from replay_assets.core.lanes import lane_for
from replay_assets.core.manifest import parse_instant
from replay_assets.definitions import build_definitions
from replay_assets.defs.lanes import LaneRunCoordinator
from replay_assets.demo.scenarios import seed001, seed003
from replay_assets.demo.seed003 import session_at, step_trace
from replay_assets.entrypoints.runner import PROJECT_INSTANCE_CONFIG
from replay_assets.entrypoints.session import Session
from replay_assets.storage.apply.reading import certified_pointer
from replay_assets.storage.db.sql import DuckDBSql
from replay_assets.storage.db.warehouse import Warehouse
from replay_assets.usecases.context import Pipeline
from replay_assets_tests.helpers import settings_for


def seed003_home(home: Path) -> None:
    """2026-09-20 applied; 2026-09-21 delivered (ready at 08:12)."""
    seed003.write_config(home)
    s = session_at(home, seed003.LEGACY_CERTIFIED_AT)
    seed003.deliver_baseline(s.settings.landing)
    assert not s.run().failed
    seed003.deliver_current(s.settings.landing)
    s.close()


def evaluate_manifest_sensor(s: Session) -> dg.SensorResult:
    sensor = s.defs.resolve_sensor_def("source_manifest_sensor")
    resources = {"replay": s.defs.resources["replay"]}
    with dg.build_sensor_context(
        instance=s.instance, resources=resources, sensor_name=sensor.name
    ) as context:
        result = sensor(context)
    assert isinstance(result, dg.SensorResult)
    return result


def test_the_first_tick_after_the_source_is_ready_launches_the_load_exactly_once(tmp_path: Path) -> None:
    seed003_home(tmp_path)
    early = session_at(tmp_path, seed003.BLOCKED_RUN_AT)
    skipped = evaluate_manifest_sensor(early)
    assert not skipped.run_requests
    assert "2026-09-21 BLOCKED_UPSTREAM" in str(skipped.skip_reason)
    assert "ATLAS-20260921.manifest.json" in str(skipped.skip_reason)
    assert early.run().runs == []
    early.close()
    ready = session_at(tmp_path, seed003.RETRIED_RUN_AT)
    [request] = evaluate_manifest_sensor(ready).run_requests or []
    assert request.partition_key == seed003.CURRENT_DATE
    first = ready.run()
    assert [(sensor, key.rsplit(":", 1)[0], ok) for sensor, key, ok, _ in first.runs] == [
        ("source_manifest_sensor", "apply:2026-09-21", True),
        ("restatement_sensor", "restate:2026-09-17:2026-09-21", True),
    ]
    assert ready.run().runs == []  # the next tick: nothing launched again
    assert not evaluate_manifest_sensor(ready).run_requests
    launched = ready.instance.get_runs(filters=dg.RunsFilter(tags={"replay/request_key": first.runs[0][1]}))
    assert len(launched) == 1
    ready.close()


def test_a_retry_after_the_commit_applies_nothing_twice(tmp_path: Path) -> None:
    seed003_home(tmp_path)
    s = session_at(tmp_path, seed003.RETRIED_RUN_AT, fail_once="current_state:after_commit")
    summary = s.run()
    assert all(ok for _, _, ok, _ in summary.runs)
    [run] = s.instance.get_runs(
        filters=dg.RunsFilter(tags={"replay/requested_by": "source_manifest_sensor"}), limit=1
    )
    assert step_trace(s.instance, run.run_id, "current_state") == [
        "STEP_START",
        "STEP_UP_FOR_RETRY",
        "STEP_RESTARTED",
        "STEP_SUCCESS",
    ]
    [op] = s.query(
        """SELECT operation_id, state FROM operations
                      WHERE kind = 'apply_load_date' AND partition_key = ?""",
        [seed003.CURRENT_DATE],
    )
    assert op["state"] == "COMPLETE"
    mutations = s.query(
        "SELECT count(*) AS n FROM operation_audit WHERE operation_id = ? AND to_state = 'TARGET_COMMITTED'",
        [op["operation_id"]],
    )
    history = s.query("SELECT count(*) AS n FROM order_history WHERE load_date = ?", [seed003.CURRENT_DATE])
    versions = s.query(
        "SELECT count(*) AS n FROM publications WHERE asset = 'current_orders' AND partition_key = ?",
        [seed003.CURRENT_DATE],
    )
    assert mutations == [{"n": 1}]
    assert history == [{"n": len(seed003.current_lines())}]
    assert versions == [{"n": 1}]
    s.close()


def test_lanes_come_from_the_run_and_from_the_root_of_a_retry() -> None:
    assert lane_for({}) == "current"
    assert lane_for({"replay/lane": "current"}) == "current"
    assert lane_for({"dagster/backfill": "abc"}) == "backfill"
    assert lane_for({"replay/lane": "current", "dagster/backfill": "abc"}) == "backfill"
    assert lane_for({"dagster/root_run_id": "r"}, {"dagster/backfill": "abc"}) == "backfill"
    assert lane_for({"dagster/root_run_id": "r"}, {"replay/lane": "current"}) == "current"


def test_the_instance_queues_runs_through_the_lane_coordinator_with_lane_limits(tmp_path: Path) -> None:
    (tmp_path / "dagster.yaml").write_bytes(PROJECT_INSTANCE_CONFIG.read_bytes())
    with dg.DagsterInstance.from_config(str(tmp_path)) as instance:
        assert isinstance(instance.run_coordinator, LaneRunCoordinator)
        limits = instance.get_concurrency_config().run_queue_config.tag_concurrency_limits
    assert {(lim["key"], lim["value"], lim["limit"]) for lim in limits} == {
        ("replay/lane", "current", 2),
        ("replay/lane", "backfill", 1),
    }


def test_materializations_carry_evidence_a_person_can_read(tmp_path: Path) -> None:
    seed003_home(tmp_path)
    s = session_at(tmp_path, seed003.RETRIED_RUN_AT)
    assert not s.run().failed

    def latest(asset: str) -> dict[str, object]:
        [record] = s.instance.fetch_materializations(dg.AssetKey(asset), limit=1).records
        materialization = record.asset_materialization
        assert materialization is not None
        return {k: getattr(v, "value", v) for k, v in materialization.metadata.items()}

    def rows(value: object) -> list[tuple[object, ...]]:
        assert isinstance(value, dg.TableMetadataValue)  # a typed table, its columns in order
        columns = [c.name for c in value.schema.columns]
        return [tuple(r.data[c] for c in columns) for r in value.records]

    state = latest("current_orders")
    assert rows(state["reconciliation"]) == [("ATLAS-20260921", 5, 5, 0, 0, 0, True)]
    assert rows(state["controls"]) == [(9, 7, 11, 740, 450, 290)]
    assert ("availability", 12.0, "min", "<= 30", True) in rows(state["service_levels"])  # 08:12 - 08:00
    assert state["dagster/row_count"] == 10  # nine active lines and the tombstone of O1005|2
    assert rows(latest("daily_aggregates")["daily_totals"]) == [("2026-09-21", 1, 60, 25)]
    s.close()


class _ReleaseOnRetry(logging.Handler):
    """Frees a held warehouse lock when Dagster puts a step up for retry. Loggers receive each
    event in the step's own process and thread, so the retry starts only after the release: no
    sleeping, no polling."""

    def __init__(self, held: ExitStack) -> None:
        super().__init__()
        self.held = held
        self.errors: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        event = getattr(record, "dagster_event", None)
        if event is not None and event.is_step_up_for_retry:
            self.errors.append(event.step_retry_data.error.to_string())
            self.held.close()


def test_a_step_that_finds_the_warehouse_busy_is_retried_and_loads_once_the_lock_is_free(
    tmp_path: Path,
) -> None:
    settings = settings_for(tmp_path, seed001.NOW, lock_timeout_seconds=0.2)
    seed001.deliver_baseline(settings.landing)
    held = ExitStack()
    held.enter_context(Warehouse(settings.home).connect())  # e.g. a long reconcile
    release = _ReleaseOnRetry(held)

    @dg.logger
    def release_on_retry(_: dg.InitLoggerContext) -> logging.Logger:
        log = logging.Logger("release_on_retry", logging.DEBUG)
        log.addHandler(release)
        return log

    defs = dg.Definitions.merge(
        build_definitions(settings), dg.Definitions(loggers={"release_on_retry": release_on_retry})
    )
    with dg.DagsterInstance.ephemeral() as instance, held:
        result = defs.resolve_job_def("apply_load_date_job").execute_in_process(
            partition_key=seed001.BASELINE_DATE,
            instance=instance,
            run_config={"loggers": {"release_on_retry": {}}},
            raise_on_error=False,
        )
        trace = step_trace(instance, result.run_id, "raw_receipts")
    assert result.success
    assert trace == ["STEP_START", "STEP_UP_FOR_RETRY", "STEP_RESTARTED", "STEP_SUCCESS"]
    [error] = release.errors
    assert "REPLAY_WAREHOUSE_BUSY" in error and "(waited 0.2 s)" in error  # the configured wait
    pipeline = Pipeline(settings)
    assert pipeline.now() - parse_instant(seed001.NOW, "now") == dt.timedelta(seconds=5)  # the backoff
    with pipeline.warehouse.connect() as con:
        assert certified_pointer(DuckDBSql(con)) == seed001.BASELINE_DATE
