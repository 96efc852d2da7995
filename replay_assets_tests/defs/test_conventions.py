"""SPEC 11 "Dagster-native": the project works with ``dg`` the way a Dagster user expects, from the
repository root, on a home of its own."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

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
