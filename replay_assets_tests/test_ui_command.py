"""`replay-assets ui`: an empty home gets the sample scenario, then `dagster dev` serves it."""

import json
import os
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from replay_assets.entrypoints.cli import main
from replay_assets_tests.ui.dagster_dev import free_port, wait_for

pytestmark = pytest.mark.slow
RUNS_QUERY = {"query": "{ runsOrError { ... on Runs { results { runId status } } } }"}


def test_dry_run_seeds_an_empty_home_once_and_names_the_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("REPLAY_ASSETS_NOW", "DAGSTER_HOME", "REPLAY_ASSETS_HOME"):
        monkeypatch.delenv(name, raising=False)
    home = tmp_path / "home"
    assert main(["ui", "--home", str(home), "--port", "3111", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "landing the sample scenario" in out
    assert f"dev -w {home / 'dagster' / 'workspace.yaml'} -h 127.0.0.1 -p 3111" in out
    assert list((home / "landing").glob("*/*/*.manifest.json"))
    assert (home / "dagster" / "dagster.yaml").exists()
    assert main(["ui", "--home", str(home), "--dry-run"]) == 0
    assert "landing the sample scenario" not in capsys.readouterr().out  # a filled home is left alone


def test_ui_serves_the_sample_runs(tmp_path: Path) -> None:
    home, port = tmp_path / "home", free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("REPLAY_ASSETS_", "DAGSTER_"))}
    cli = Path(sys.executable).with_name("replay-assets")
    log = tmp_path / "ui.log"
    with open(log, "wb") as out:
        child = subprocess.Popen(
            [str(cli), "ui", "--home", str(home), "--port", str(port)],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:

        def runs() -> list[dict[str, str]] | None:
            request = urllib.request.Request(
                f"http://127.0.0.1:{port}/graphql",
                data=json.dumps(RUNS_QUERY).encode(),
                headers={"Content-Type": "application/json"},
            )
            try:
                with urllib.request.urlopen(request, timeout=5) as response:
                    return json.loads(response.read())["data"]["runsOrError"]["results"] or None
            except OSError:
                return None

        found = wait_for(runs, 240, "the UI to serve the sample's runs")
        assert any(r["status"] == "SUCCESS" for r in found)
    finally:
        os.killpg(child.pid, 15)
        child.wait(timeout=60)
