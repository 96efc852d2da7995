"""A partition's checks read as its certification report (SPEC 11): every check partitioned like
its asset, one evaluation per partition (a range run included), a refused run evaluates none, a
date with no sales is shown as such and not certified, metadata in Dagster's own types."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import pytest

from replay_assets.core import schemas
from replay_assets.definitions import build_definitions
from replay_assets.demo.scenarios import seed001
from replay_assets.demo.seed003 import step_trace
from replay_assets.usecases.context import Pipeline
from replay_assets_tests.helpers import settings_for

RANGE = ["2026-09-17", "2026-09-18", "2026-09-19", "2026-09-20"]
NO_SALES_DATE = "2026-09-17"  # before the fixture's first business date
ASSETS = ("raw_receipts", "current_orders", "daily_aggregates")
RANGE_TAGS = {"dagster/asset_partition_range_start": RANGE[0], "dagster/asset_partition_range_end": RANGE[-1]}


class Home:
    def __init__(self, tmp_path: Path, **extra: object) -> None:
        self.settings = settings_for(
            tmp_path, seed001.NOW, load_date_start="2026-09-15", business_date_start="2026-09-15", **extra
        )
        seed001.deliver_baseline(self.settings.landing)
        self.defs = build_definitions(self.settings)
        self.instance = dg.DagsterInstance.ephemeral()

    def apply(self, load_date: str) -> dg.ExecuteInProcessResult:
        job = self.defs.resolve_job_def("apply_load_date_job")
        return job.execute_in_process(partition_key=load_date, instance=self.instance, raise_on_error=False)

    def restate_range(self) -> dg.ExecuteInProcessResult:
        job = self.defs.resolve_job_def("restate_aggregates_job")
        return job.execute_in_process(instance=self.instance, tags=RANGE_TAGS, raise_on_error=False)

    def check_keys(self, asset: str) -> list[dg.AssetCheckKey]:
        return [spec.key for spec in self.defs.resolve_assets_def(asset).check_specs]

    def executions(self, key: dg.AssetCheckKey, run_id: str) -> list[tuple[str | None, str]]:
        history = self.instance.event_log_storage.get_asset_check_execution_history(key, limit=100)
        return sorted((r.partition, r.status.value) for r in history if r.run_id == run_id)

    def materializations(self, run_id: str) -> dict[str, dict[str, object]]:
        records = self.instance.fetch_materializations(dg.AssetKey("daily_aggregates"), limit=100).records
        return {
            str(r.partition_key): {
                k: getattr(v, "value", v) for k, v in r.asset_materialization.metadata.items()
            }
            for r in records
            if r.run_id == run_id and r.asset_materialization is not None
        }


@pytest.fixture
def home(tmp_path: Path) -> Iterator[Home]:
    made = Home(tmp_path)
    yield made
    made.instance.dispose()


def test_every_check_is_partitioned_like_its_asset(home: Home) -> None:
    for asset in ASSETS:
        partitions = home.defs.resolve_assets_def(asset).partitions_def
        specs = home.defs.resolve_assets_def(asset).check_specs
        assert specs and all(spec.partitions_def == partitions for spec in specs), asset
    assert {s.name for s in home.defs.resolve_assets_def("raw_receipts").check_specs} == {
        "delivery_matches_manifest",
        "rejections_within_policy",
        "reconciliation_adds_up",
    }


def test_a_load_date_reports_each_check_on_its_partition(home: Home) -> None:
    run = home.apply(seed001.BASELINE_DATE)
    assert run.success
    for asset in ("raw_receipts", "current_orders"):
        for key in home.check_keys(asset):
            [(partition, status)] = home.executions(key, run.run_id)  # no "Skipped" row beside it
            assert partition == seed001.BASELINE_DATE and status in {"SUCCEEDED", "FAILED"}, key
    evaluations = {e.check_name: e for e in run.get_asset_check_evaluations()}
    assert evaluations["delivery_matches_manifest"].passed
    assert evaluations["rejections_within_policy"].metadata["rejected"].value == 0


def test_a_range_run_reports_one_evaluation_and_one_materialization_per_business_date(home: Home) -> None:
    assert home.apply(seed001.BASELINE_DATE).success
    run = home.restate_range()
    assert run.success
    for key in home.check_keys("daily_aggregates"):
        executions = home.executions(key, run.run_id)
        assert [p for p, _ in executions] == RANGE, key  # one each, none left planned or skipped
        assert all(status in {"SUCCEEDED", "FAILED"} for _, status in executions), (key, executions)
    by_date = home.materializations(run.run_id)
    assert sorted(by_date) == RANGE
    with Pipeline(home.settings).warehouse.connect() as con:
        rows = dict(
            con.execute("SELECT business_date::VARCHAR, count(*) FROM daily_aggregates GROUP BY 1").fetchall()
        )
        amounts = dict(
            con.execute(
                "SELECT business_date::VARCHAR, sum(amount_minor) FROM daily_aggregates GROUP BY 1"
            ).fetchall()
        )
    for day, meta in by_date.items():  # each date carries its own figures, never the range's
        assert meta["dagster/row_count"] == rows.get(day, 0), day
        assert meta["amount_minor"] == amounts.get(day, 0), day
        totals = meta["daily_totals"]
        assert isinstance(totals, dg.TableMetadataValue)
        assert [r.data["business_date"] for r in totals.records] == [day]


def test_a_business_date_without_sales_is_shown_as_such_and_publishes_nothing(home: Home) -> None:
    assert home.apply(seed001.BASELINE_DATE).success
    run = home.restate_range()
    assert run.success
    meta = home.materializations(run.run_id)[NO_SALES_DATE]
    assert meta["sales"] == "no sales" and meta["certified"] is False
    assert meta["publication"] == "none (no sales)"
    gate = [e for e in run.get_asset_check_evaluations() if e.partition == NO_SALES_DATE]
    assert len(gate) == 7 and all(e.passed and "no sales" in str(e.description) for e in gate)
    with Pipeline(home.settings).warehouse.connect() as con:
        published = con.execute(
            "SELECT partition_key FROM publications WHERE asset = 'daily_aggregates' ORDER BY 1"
        ).fetchall()
    assert (NO_SALES_DATE,) not in published and ("2026-09-18",) in published


def test_a_run_refused_before_it_built_anything_evaluates_no_check(home: Home) -> None:
    certified = home.apply(seed001.BASELINE_DATE)
    refused = home.apply("2026-09-22")  # no delivery for it
    assert certified.success and not refused.success
    assert refused.get_asset_check_evaluations() == []
    for asset in ("raw_receipts", "current_orders"):
        for key in home.check_keys(asset):
            history = home.instance.event_log_storage.get_asset_check_execution_history(key, limit=100)
            evaluated = [(r.partition, r.run_id) for r in history if r.status.value != "PLANNED"]
            assert evaluated == [(seed001.BASELINE_DATE, certified.run_id)], key  # the report stands


def test_the_failed_re_verification_says_why_in_its_description_and_passes_once_repaired(home: Home) -> None:
    assert home.apply(seed001.BASELINE_DATE).success and home.restate_range().success
    audit = home.defs.resolve_job_def("reverify_publications_job")
    with Pipeline(home.settings).warehouse.transaction() as con:
        [(digest,)] = con.execute(
            "SELECT content_sha256 FROM publications WHERE partition_key = '2026-09-18'"
        ).fetchall()
        con.execute("UPDATE publications SET content_sha256 = 'x' WHERE partition_key = '2026-09-18'")
    failed = {
        e.asset_key.path[0]: e
        for e in audit.execute_in_process(instance=home.instance).get_asset_check_evaluations()
    }
    drifted = failed["daily_aggregates"]
    assert not drifted.passed and "2026-09-18" in str(drifted.description)
    assert "differ from their recomputation" in str(drifted.description)
    with Pipeline(home.settings).warehouse.transaction() as con:
        con.execute("UPDATE publications SET content_sha256 = ? WHERE partition_key = '2026-09-18'", [digest])
    repaired = audit.execute_in_process(instance=home.instance).get_asset_check_evaluations()
    assert all(e.passed and "equal their recomputation" in str(e.description) for e in repaired)


def test_metadata_uses_dagster_types_plain_numbers_and_the_pandera_schemas(home: Home) -> None:
    run = home.apply(seed001.BASELINE_DATE)
    [state] = [
        m
        for m in run.asset_materializations_for_node("current_state")
        if m.asset_key.path == ["current_orders"]
    ]
    reconciliation = state.metadata["reconciliation"]
    assert isinstance(reconciliation, dg.TableMetadataValue)
    assert (
        reconciliation.schema.columns[0].name == "batch" and reconciliation.records[0].data["adds_up"] is True
    )
    assert isinstance(state.metadata["controls"], dg.TableMetadataValue)
    assert isinstance(state.metadata["active_lines"], dg.IntMetadataValue)
    assert state.metadata["active_lines"].value == 8
    assert isinstance(state.metadata["slo_freshness_minutes"], dg.FloatMetadataValue)
    for asset, schema in (
        ("current_orders", schemas.ORDER_STATE),
        ("current_customers", schemas.CUSTOMER_STATE),
        ("daily_aggregates", schemas.DAILY_AGGREGATES),
    ):
        spec = home.defs.resolve_assets_def(asset).specs_by_key[dg.AssetKey(asset)]
        columns = spec.metadata["dagster/column_schema"].columns
        assert [c.name for c in columns] == list(schema.columns), asset
        assert "duckdb" in spec.kinds and "pandera" in spec.kinds, asset


def test_retries_go_through_dagsters_retry_policy(tmp_path: Path) -> None:
    from replay_assets.defs.assets import retry_policy

    real = settings_for(tmp_path, seed001.NOW, retry_backoff_seconds=7.0)
    policy = retry_policy(dataclasses.replace(real, fixed_now=None))
    assert (policy.delay, policy.backoff, policy.max_retries) == (7.0, dg.Backoff.EXPONENTIAL, 2)
    home = Home(tmp_path / "retry", fail_once="raw_receipts:before", retry_backoff_seconds=0.0)
    try:
        run = home.apply(seed001.BASELINE_DATE)
        assert run.success
        assert step_trace(home.instance, run.run_id, "raw_receipts") == [
            "STEP_START",
            "STEP_UP_FOR_RETRY",
            "STEP_RESTARTED",
            "STEP_SUCCESS",
        ]
    finally:
        home.instance.dispose()
