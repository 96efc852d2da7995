"""The Dagster shell: graph, partitions, sensors and materializations against a real home."""

import dataclasses
from pathlib import Path

import dagster as dg
import pytest

from replay_assets.core.config import Settings, SloPolicy
from replay_assets.core.debezium import parse_mappings
from replay_assets.core.manifest import Limits
from replay_assets.core.upcast import parse_upcasters
from replay_assets.definitions import build_definitions
from replay_assets.defs.assets import build_assets
from replay_assets.defs.evidence import SERVICE_LEVELS_CHECK
from replay_assets.defs.resources import ReplayResource
from replay_assets.demo.scenarios import seed001
from replay_assets.storage.landing.deliveries import write_delivery
from replay_assets.usecases.context import Pipeline
from replay_assets_tests.helpers import settings_for


@pytest.fixture
def settings(tmp_path: Path):  # type: ignore[no-untyped-def]
    return settings_for(tmp_path, seed001.NOW)


def test_graph_wires_state_to_itself_and_aggregates_to_the_last_load_date(settings) -> None:  # type: ignore[no-untyped-def]
    defs = build_definitions(settings)
    state = defs.resolve_assets_def("current_orders")
    self_map = state.get_partition_mapping_for_dep(dg.AssetKey("current_orders"))
    assert self_map == dg.TimeWindowPartitionMapping(start_offset=-1, end_offset=-1)
    assert dg.AssetKey("raw_receipts") in state.asset_deps[dg.AssetKey("current_orders")]
    daily = defs.resolve_assets_def("daily_aggregates")
    assert isinstance(
        daily.get_partition_mapping_for_dep(dg.AssetKey("current_orders")), dg.LastPartitionMapping
    )
    assert state.keys == {dg.AssetKey("current_orders"), dg.AssetKey("current_customers")}


def test_two_partition_definitions_with_their_offsets(settings) -> None:  # type: ignore[no-untyped-def]
    defs = build_definitions(settings)
    load = defs.resolve_assets_def("raw_receipts").partitions_def
    business = defs.resolve_assets_def("daily_aggregates").partitions_def
    assert isinstance(load, dg.DailyPartitionsDefinition) and load.end_offset == 1
    assert isinstance(business, dg.DailyPartitionsDefinition)
    assert business.end_offset == 1 + settings.future_tolerance_days
    assert load.start.date().isoformat() == settings.load_date_start


def evaluate(defs: dg.Definitions, name: str, settings) -> dg.SensorResult | dg.SkipReason:  # type: ignore[no-untyped-def]
    sensor = defs.resolve_sensor_def(name)
    resources = {"replay": ReplayResource.for_settings(settings)}
    with dg.build_sensor_context(resources=resources, sensor_name=name) as context:
        return sensor(context)  # type: ignore[no-any-return]


def test_manifest_sensor_requests_every_ready_date_in_order_with_content_keys(settings) -> None:  # type: ignore[no-untyped-def]
    seed001.deliver_baseline(settings.landing)
    seed001.deliver_cdc(settings.landing, "B20260921-CDC-A", "2026-09-21", "2026-09-21T08:12:00Z")
    result = evaluate(build_definitions(settings), "source_manifest_sensor", settings)
    assert isinstance(result, dg.SensorResult)
    requests = result.run_requests or []
    assert [r.partition_key for r in requests] == ["2026-09-20", "2026-09-21"]  # in date order
    assert all(r.run_key and r.run_key.startswith(f"apply:{r.partition_key}:") for r in requests)
    assert all(r.tags["replay/lane"] == "current" for r in requests)
    again = evaluate(build_definitions(settings), "source_manifest_sensor", settings)
    assert isinstance(again, dg.SensorResult)
    assert [r.run_key for r in again.run_requests] == [r.run_key for r in requests]


def test_manifest_sensor_names_the_file_that_is_not_ready(settings) -> None:  # type: ignore[no-untyped-def]
    write_delivery(settings.landing, "erp", "2026-09-20", "B-LATE", [], "2026-09-30T00:00:00Z")
    result = evaluate(build_definitions(settings), "source_manifest_sensor", settings)
    assert isinstance(result, dg.SensorResult) and not result.run_requests
    assert "BLOCKED_UPSTREAM" in str(result.skip_reason) and "B-LATE.manifest.json" in str(result.skip_reason)


def test_materializing_a_load_date_before_its_predecessor_is_a_failed_candidate(settings) -> None:  # type: ignore[no-untyped-def]
    seed001.deliver_baseline(settings.landing)
    seed001.deliver_cdc(settings.landing, "B20260921-CDC-A", "2026-09-21", "2026-09-21T08:12:00Z")
    assets = build_assets(settings)
    resources = {"replay": ReplayResource.for_settings(settings)}
    early = dg.materialize(assets[:2], partition_key="2026-09-21", resources=resources, raise_on_error=False)
    assert not early.success  # the blocking check failed inside the building step
    checks = {e.check_name: e for e in early.get_asset_check_evaluations()}
    completeness = checks["upstream_load_dates_certified"]
    assert not completeness.passed and completeness.severity is dg.AssetCheckSeverity.ERROR
    assert completeness.description == "MISSING_UPSTREAM_LOAD_DATE 2026-09-20"
    assert all(c.passed for name, c in checks.items() if name != "upstream_load_dates_certified")
    pipeline = ReplayResource.for_settings(settings).pipeline()
    with pipeline.warehouse.connect() as con:
        assert con.execute("SELECT count(*) FROM load_dates").fetchall() == [(0,)]
        assert con.execute("SELECT count(*) FROM order_history").fetchall() == [(0,)]
        [(reason, path)] = con.execute("SELECT reason, rows_path FROM candidates").fetchall()
    assert "MISSING_UPSTREAM_LOAD_DATE 2026-09-20" in reason and Path(path).exists()
    ok = dg.materialize(assets[:2], partition_key="2026-09-20", resources=resources)
    assert ok.success
    meta = ok.asset_materializations_for_node("current_state")[0].metadata
    assert meta["controls (lines, orders, units, amount, cost, profit)"].value == "(8, 5, 10, 690, 425, 265)"
    gate = [e for e in ok.get_asset_check_evaluations() if e.asset_key == dg.AssetKey("current_orders")]
    evaluations = {e.check_name: e for e in gate}
    levels = evaluations.pop(SERVICE_LEVELS_CHECK)  # measured days after the fact: missed, a warning
    assert all(e.passed for e in evaluations.values()) and len(evaluations) == 6
    assert not levels.passed and levels.severity is dg.AssetCheckSeverity.WARN
    assert "service_levels" in levels.metadata and levels.metadata["missed"].value == "2026-09-20"
    again = dg.materialize(assets[:2], partition_key="2026-09-21", resources=resources)
    assert again.success  # the pointer moved: the same input is tried again and certified


def test_reverification_checks_recompute_publications_as_of_their_load_date(settings) -> None:  # type: ignore[no-untyped-def]
    from replay_assets.usecases.context import Pipeline
    from replay_assets_tests.helpers import drive

    pipeline = Pipeline(settings)
    seed001.deliver_baseline(settings.landing)
    seed001.deliver_cdc(settings.landing, "B20260921-CDC-A", "2026-09-21", "2026-09-21T08:12:00Z")
    drive(pipeline)
    defs = build_definitions(settings)
    checks = [
        dg.AssetCheckKey(dg.AssetKey(a), "publications_match_recomputation")
        for a in ("current_orders", "daily_aggregates")
    ]
    job = defs.resolve_implicit_global_asset_job_def().get_subset(asset_check_selection=set(checks))
    assert all(e.passed for e in job.execute_in_process().get_asset_check_evaluations())
    with pipeline.warehouse.transaction() as con:  # a stored publication record drifts
        con.execute("""UPDATE publications SET content_sha256 = 'x' WHERE asset = 'daily_aggregates'
                       AND partition_key = '2026-09-18'""")
    evaluations = {e.asset_key.path[0]: e for e in job.execute_in_process().get_asset_check_evaluations()}
    assert evaluations["current_orders"].passed
    failed = evaluations["daily_aggregates"]
    assert not failed.passed and failed.metadata["mismatched"].value == "2026-09-18"


def test_step_metadata_carries_cost_evidence(settings) -> None:  # type: ignore[no-untyped-def]
    seed001.deliver_baseline(settings.landing)
    assets = build_assets(settings)
    result = dg.materialize(
        assets[:2], partition_key="2026-09-20", resources={"replay": ReplayResource.for_settings(settings)}
    )
    landed = result.asset_materializations_for_node("raw_receipts")[0].metadata
    applied = result.asset_materializations_for_node("current_state")[0].metadata
    assert landed["cost_events"].value == 12 and landed["cost_bytes_read"].value > 0
    assert applied["cost_events"].value == 12 and applied["cost_rows_written"].value >= 12
    assert applied["cost_wall_seconds"].value > 0


def _default(field: dataclasses.Field) -> object:  # type: ignore[type-arg]
    return field.default_factory() if field.default_factory is not dataclasses.MISSING else field.default


def test_every_setting_reaches_the_pipeline_of_the_resource(tmp_path: Path, sail: str) -> None:
    configured = settings_for(
        tmp_path,
        seed001.NOW,
        load_date_start="2026-09-01",
        business_date_start="2026-08-01",
        future_tolerance_days=3,
        sources={"erp": "2026-09-20"},
        limits=Limits(
            manifest_bytes=4096, file_bytes=1 << 20, events_per_file=99, files_per_manifest=3, line_bytes=512
        ),
        lock_timeout_seconds=0.25,
        fail_point="apply.before_commit",
        fail_once="current_state:after_commit",
        retry_backoff_seconds=1.5,
        slo=SloPolicy(freshness_minutes=5, expected_time="06:30"),
        sensor_interval_seconds=7,
        retention_load_dates=9,
        upcasters=parse_upcasters({"erp": {"2": {"rename": {"after.amount_cents": "after.amount_minor"}}}}),
        debezium=parse_mappings({"erp": {"tables": {"public.orders": {"entity": "order_line"}}}}),
        dagster_yaml=tmp_path / "dagster.yaml",
        warehouse="spark",
        spark_remote=sail,
        delta_root=str(tmp_path / "delta"),
        spark_landing_uri=(tmp_path / "landing").as_uri(),
        spark_connect_timeout_seconds=20.0,
        duckdb_memory_percent=12.5,
    )
    at_default = [
        f.name
        for f in dataclasses.fields(Settings)
        if f.name != "home" and getattr(configured, f.name) == _default(f)
    ]
    assert at_default == []  # so a field the resource drops cannot hide behind its default
    pipeline = build_definitions(configured).resources["replay"].pipeline()
    assert pipeline.settings == configured
    assert pipeline.warehouse.busy_timeout == 0.25
    assert type(pipeline.store).__name__ == "SparkStore"  # the engine the settings name
    assert pipeline.store.tables.landing.base == configured.spark_landing_uri  # type: ignore[attr-defined]


def test_configured_limits_decide_what_a_step_lands(tmp_path: Path) -> None:
    settings = settings_for(tmp_path, seed001.NOW, limits=Limits(line_bytes=100))
    seed001.deliver_baseline(settings.landing)
    result = dg.materialize(
        build_assets(settings)[:1],
        partition_key="2026-09-20",
        resources={"replay": ReplayResource.for_settings(settings)},
    )
    assert result.asset_materializations_for_node("raw_receipts")[0].metadata["rejected"].value == 12
    with Pipeline(settings).warehouse.connect() as con:
        reasons = con.execute("SELECT DISTINCT reason_code FROM rejected_events").fetchall()
    assert reasons == [("LINE_TOO_LONG",)]
