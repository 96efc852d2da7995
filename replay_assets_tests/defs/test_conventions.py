"""SPEC 11 "Dagster-native": the project works with ``dg`` the way a Dagster user expects, from the
repository root, on a home of its own."""

import dataclasses
import datetime as dt
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import dagster as dg
import pytest

from replay_assets.core.config import SCHEMA, Settings, SloPolicy, settings_from
from replay_assets.core.manifest import Limits
from replay_assets.defs.resources import ReplayResource

ROOT = Path(__file__).resolve().parents[2]


def _dg(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("REPLAY_ASSETS_", "DAGSTER_"))},
        "REPLAY_ASSETS_HOME": str(tmp_path / "home"),
        "DAGSTER_HOME": str(tmp_path / "dagster"),
    }
    (tmp_path / "dagster").mkdir()
    dg = Path(sys.executable).with_name("dg")
    return subprocess.run(
        [str(dg), *args], cwd=ROOT, env=env, capture_output=True, text=True, check=False, timeout=300
    )


@pytest.mark.slow
def test_dg_check_defs_passes_from_the_repository_root(tmp_path: Path) -> None:
    """`dg check defs` finds the project through ``[tool.dg]`` and loads its definitions."""
    done = _dg(tmp_path, "check", "defs")
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "All definitions loaded successfully" in done.stdout + done.stderr


@pytest.mark.slow
def test_dg_lists_the_projects_assets_checks_and_sensors(tmp_path: Path) -> None:
    """`dg list defs` sees the composition root's definitions, the consumer example included."""
    done = _dg(tmp_path, "list", "defs", "--json")
    assert done.returncode == 0, done.stderr[-2000:]
    listed = json.loads(done.stdout)
    assets = {asset["asset_key"] for asset in listed["assets"]}
    assert {"raw_receipts", "current_orders", "current_customers", "daily_aggregates"} <= assets
    sensors = {sensor["name"] for sensor in listed["sensors"]}
    assert {"source_manifest_sensor", "restatement_sensor"} <= sensors


KNOBS = ("fixed_now", "fail_point", "fail_once")
TEXTS = (
    "home",
    "load_date_start",
    "business_date_start",
    "dagster_yaml",
    "warehouse",
    "spark_remote",
    "delta_root",
    "spark_landing_uri",
)
NOW = dt.datetime(2026, 9, 24, 12, tzinfo=dt.UTC)


def _fields(config_type: Any) -> dict[str, Any]:
    return {name: field.config_type for name, field in config_type.fields.items()}


def test_the_resource_has_typed_fields_only_and_no_test_knobs(tmp_path: Path) -> None:
    """What the launchpad shows of the resource: the production settings, typed (nested settings
    as objects with their own typed fields, never JSON in a string), and none of the rehearsal's
    clock or faults."""
    resource = ReplayResource.for_settings(settings_from({}, str(tmp_path), None))
    fields = _fields(resource.get_resource_definition().config_schema.config_type)
    assert set(fields) == {key for key in SCHEMA if key not in KNOBS} | {"home"}
    assert _fields(fields["limits"]).keys() == {f.name for f in dataclasses.fields(Limits)}
    assert _fields(fields["slo"]).keys() == {f.name for f in dataclasses.fields(SloPolicy)}
    kinds = {name: _inner(kind).kind.name for name, kind in fields.items()}
    assert {name for name, kind in kinds.items() if kind == "MAP"} == {"sources", "upcasters", "debezium"}
    assert kinds["limits"] == kinds["slo"] == "STRICT_SHAPE"
    texts = {name for name, kind in fields.items() if _inner(kind).key == "StringSourceType"}
    assert texts == set(TEXTS)  # no JSON carried as text


def _inner(kind: Any) -> Any:
    return kind.inner_type if kind.kind.name == "NONEABLE" else kind


@dg.asset
def rehearsal_probe(replay: ReplayResource) -> dg.MaterializeResult:  # type: ignore[type-arg]
    s = replay.pipeline().settings
    return dg.MaterializeResult(
        metadata={"now": str(s.fixed_now), "fail_once": str(s.fail_once), "lock": s.lock_timeout_seconds}
    )


def _probe(settings: Settings, run_config: dict[str, Any] | None = None) -> dict[str, Any]:
    result = dg.materialize(
        [rehearsal_probe], resources={"replay": ReplayResource.for_settings(settings)}, run_config=run_config
    )
    [materialization] = result.asset_materializations_for_node("rehearsal_probe")
    return {key: value.value for key, value in materialization.metadata.items()}


def test_the_rehearsal_reaches_the_steps_and_survives_a_launchpad_edit(tmp_path: Path) -> None:
    """The demo's and the tests' clock and faults reach the pipeline inside a Dagster step, also
    when the run's configuration edits the resource (as the launchpad does), which never names
    them."""
    settings = Settings(home=tmp_path, fixed_now=NOW, fail_once="current_state")
    assert _probe(settings) == {"now": str(NOW), "fail_once": "current_state", "lock": 60.0}
    config = ReplayResource.for_settings(settings).get_resource_definition().config_schema
    assert not {"fixed_now", "fail_once"} & set(config.config_type.fields)
    edited = {**dataclasses.asdict(ReplayResource.for_settings(settings).settings()), "home": str(tmp_path)}
    launchpad = {key: edited[key] for key in ("home", "load_date_start", "business_date_start")}
    run_config = {"resources": {"replay": {"config": {**launchpad, "lock_timeout_seconds": 5.0}}}}
    assert _probe(settings, run_config) == {"now": str(NOW), "fail_once": "current_state", "lock": 5.0}
