"""A run's tags say how it was launched (SPEC 11): ``replay-assets run`` executes its runs itself
and tags them as the CLI's, never with the tags by which the UI shows a sensor, a schedule or a
backfill as the launcher; and a daemon started on the same instance afterwards finds nothing left
to do (pending work comes from the warehouse, not from run keys)."""

import os
import signal
import subprocess
import sys
from pathlib import Path

import dagster as dg
import pytest

from replay_assets.entrypoints.session import Session
from replay_assets_tests.defs.test_backfill_native import graphql_on, query
from replay_assets_tests.defs.test_lanes_daemon import DAYS, NOW, deliver, wait_for
from replay_assets_tests.helpers import settings_for

pytestmark = pytest.mark.slow  # Dagster runs on a real instance, then the real daemon

# the tags the UI's "Launched by" column (CreatedByTag.tsx) and the Backfills page read
LAUNCHER_TAGS = {"dagster/sensor_name", "dagster/schedule_name", "dagster/run_key", "dagster/backfill"}
TICKS = """query($selector: SensorSelector!) {
  sensorOrError(sensorSelector: $selector) {
    ... on Sensor { sensorState { ticks(limit: 20) { status runIds skipReason } } }
  }
}"""


def cli_run(home: Path) -> list[dg.DagsterRun]:
    session = Session(settings_for(home, NOW), home / "dagster")
    deliver(session.settings.landing, DAYS[:2])
    try:
        assert not session.run().failed
        return list(session.instance.get_runs())
    finally:
        session.close()


def test_cli_runs_are_tagged_as_the_clis_never_as_a_sensors(tmp_path: Path) -> None:
    runs = cli_run(tmp_path / "home")
    assert runs
    for run in runs:
        assert not LAUNCHER_TAGS & set(run.tags), run.tags
        assert run.tags["replay/launched_by"] == "cli"
        assert run.tags["user"]  # "Launched by" shows the user who ran the command
    requested = sorted(run.tags["replay/requested_by"] for run in runs)
    assert requested == ["restatement_sensor", "source_manifest_sensor"]  # both load dates: one catch-up run


def test_a_daemon_after_the_cli_requests_nothing_it_did(tmp_path: Path) -> None:
    home = tmp_path / "home"
    before = {run.run_id for run in cli_run(home)}
    env = {
        **os.environ,
        "REPLAY_ASSETS_HOME": str(home),
        "DAGSTER_HOME": str(home / "dagster"),
        "REPLAY_ASSETS_NOW": NOW,
        "REPLAY_ASSETS_SENSOR_INTERVAL_SECONDS": "1",
    }
    workspace = str(home / "dagster" / "workspace.yaml")
    daemon = subprocess.Popen(
        [str(Path(sys.executable).with_name("dagster-daemon")), "run", "-w", workspace],
        cwd=home / "dagster",
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        with graphql_on(home / "dagster") as context:

            def ticks(name: str) -> list[dict[str, object]]:
                selector = {
                    "repositoryLocationName": "replay_assets.definitions",
                    "repositoryName": "__repository__",
                    "sensorName": name,
                }
                found = query(context, TICKS, {"selector": selector})["sensorOrError"]
                return [t for t in found["sensorState"]["ticks"] if t["status"] != "STARTED"]

            names = ("source_manifest_sensor", "restatement_sensor")
            wait_for(lambda: all(len(ticks(name)) >= 2 for name in names), 180, "two ticks of each sensor")
            evaluated = {name: ticks(name) for name in names}
    finally:
        os.killpg(daemon.pid, signal.SIGTERM)
        daemon.wait(timeout=60)
    for name, found in evaluated.items():
        assert {t["status"] for t in found} == {"SKIPPED"}, (name, found)
        assert all(t["runIds"] == [] for t in found)
    instance = dg.DagsterInstance.from_config(str(home / "dagster"))
    try:
        assert {run.run_id for run in instance.get_runs()} == before
    finally:
        instance.dispose()
