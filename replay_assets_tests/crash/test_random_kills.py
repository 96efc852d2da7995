"""Kill the whole `replay-assets run` process group at arbitrary instants (seeded, so a failure
replays), then rerun: the outcome equals an uninterrupted run, nothing is left STARTED."""

import os
import random
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import dagster as dg
import pytest

from replay_assets.scenarios import seed001
from replay_assets_tests.crash.test_kill_matrix import outcome, session

# instants inside a run of two load dates (about 4-8 s on this machine, imports included)
INSTANTS = [round(random.Random(seed).uniform(1.5, 6.0), 2) for seed in range(4)]


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, object]]:
    home = tmp_path_factory.mktemp("random") / "template"
    seed001.deliver_baseline(home / "landing")
    seed001.deliver_cdc(home / "landing", "B20260921-CDC-A", "2026-09-21", "2026-09-21T08:12:00Z")
    reference = home.parent / "reference"
    shutil.copytree(home, reference)
    s = session(reference, seed001.NOW)
    assert not s.run().failed
    result = outcome(s)
    s.close()
    return home, result


@pytest.mark.parametrize("instant", INSTANTS)
def test_a_killed_process_group_then_a_rerun_equals_an_uninterrupted_run(
    template: tuple[Path, dict[str, object]], tmp_path: Path, instant: float
) -> None:
    source, reference = template
    home = tmp_path / "home"
    shutil.copytree(source, home)
    env = {
        **os.environ,
        "REPLAY_ASSETS_HOME": str(home),
        "REPLAY_ASSETS_NOW": seed001.NOW,
        "DAGSTER_HOME": str(home / "dagster"),
    }
    child = subprocess.Popen(
        [sys.executable, "-m", "replay_assets.cli", "run", "--home", str(home)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        child.wait(timeout=instant)  # the kill instant is the fault being injected, not a timing check
    except subprocess.TimeoutExpired:
        os.killpg(child.pid, signal.SIGKILL)
        child.wait()
    s = session(home, seed001.NOW)
    s.run()
    assert not s.instance.get_runs(filters=dg.RunsFilter(statuses=[dg.DagsterRunStatus.STARTED]))
    assert outcome(s) == reference
    s.close()
