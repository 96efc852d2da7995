"""``run`` with nothing to do answers without Dagster, and only then: every kind of pending work
(a delivery, a date not settled, a journal entry not complete, a run a killed process left
STARTED, a daemon, a pruning, a queued restatement, a writer's note) takes the full path."""

import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import dagster as dg
import duckdb
import pytest
from dagster._daemon.types import DaemonHeartbeat  # Dagster's own type for a daemon heartbeat

from replay_assets.core.status import PartitionStatus
from replay_assets.demo.scenarios import seed001
from replay_assets.entrypoints.cli import main
from replay_assets.entrypoints.environment import settings_from_environment
from replay_assets.entrypoints.idle_run import run_if_idle
from replay_assets.entrypoints.runner import instance_for
from replay_assets.usecases.apply import apply
from replay_assets.usecases.context import Pipeline
from replay_assets.usecases.idle import pending_work
from replay_assets.usecases.land import land
from replay_assets_tests import journal_operation
from replay_assets_tests.helpers import warehouse_fingerprint

DAY = "2026-09-19"  # a load date before the baseline's
IDLE_REPORT = (
    "0 runs, 0 failed; 1 load dates applied; 0 orphaned runs marked failed; 0 in-doubt operations finished"
)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Path:
    """A home whose baseline a full ``run`` applied and published: nothing left to do."""
    monkeypatch.setenv("REPLAY_ASSETS_NOW", seed001.NOW)
    monkeypatch.delenv("DAGSTER_HOME", raising=False)
    monkeypatch.delenv("REPLAY_ASSETS_FAIL_POINT", raising=False)
    home = tmp_path / "home"
    seed001.deliver_baseline(home / "landing")
    assert main(["run", "--home", str(home)]) == 0
    capsys.readouterr()
    return home


def pipeline_of(home: Path) -> Pipeline:
    return Pipeline(settings_from_environment(str(home)))


def idle(home: Path) -> bool:
    settings = settings_from_environment(str(home))
    return run_if_idle(settings, settings.dagster_home) is not None


def run(home: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main(["run", "--home", str(home)])
    return code, capsys.readouterr().out


NO_DAGSTER = """
import sys
from replay_assets.entrypoints.cli import main
code = main(["run", "--home", sys.argv[1]])
print(code, "dagster" in sys.modules, file=sys.stderr)
"""


def test_a_run_with_nothing_to_do_says_so_without_importing_dagster(home: Path) -> None:
    before = warehouse_fingerprint(pipeline_of(home))
    env = {**os.environ, "REPLAY_ASSETS_NOW": seed001.NOW}
    child = subprocess.run(
        [sys.executable, "-c", NO_DAGSTER, str(home)], env=env, capture_output=True, text=True, check=False
    )
    assert child.stderr.splitlines()[-1] == "0 False", child.stderr
    assert child.stdout.splitlines() == [IDLE_REPORT]
    assert warehouse_fingerprint(pipeline_of(home)) == before


def test_a_new_delivery_is_applied(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    seed001.deliver_cdc(home / "landing", "B20260921-CDC", seed001.CDC_DATE, "2026-09-21T08:00:00Z")
    assert pending_work(pipeline_of(home)) is not None and not idle(home)
    code, out = run(home, capsys)
    assert code == 0 and f"apply:{seed001.CDC_DATE}" in out and "2 load dates applied" in out
    assert idle(home)


def test_a_date_that_is_not_settled_takes_the_full_path(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    seed001.deliver_cdc(home / "landing", "B20260921-CDC", seed001.CDC_DATE, "2026-09-30T08:00:00Z")
    assert pending_work(pipeline_of(home)) is not None and not idle(home)  # ready only in the future
    out = run(home, capsys)[1]
    assert "1 load dates applied" in out and seed001.CDC_DATE in out


def test_a_journal_entry_not_complete_takes_the_full_path(home: Path) -> None:
    pipeline = pipeline_of(home)
    with pipeline.store.transaction() as unit:
        unit.journal.create_or_get_entry(journal_operation.operation(), "test", journal_operation.NOW)
    assert pending_work(pipeline) == "an operation of the journal is not complete"
    assert not idle(home)


def test_a_run_a_killed_process_left_started_is_marked_failed(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    instance = instance_for(home / "dagster")
    run_id = str(uuid.uuid4())
    instance.add_run(
        dg.DagsterRun(job_name="apply_load_date_job", run_id=run_id, status=dg.DagsterRunStatus.STARTED)
    )
    instance.dispose()
    assert pending_work(pipeline_of(home)) is None  # the warehouse has nothing: only Dagster knows
    assert not idle(home)
    code, out = run(home, capsys)
    assert code == 0 and "1 orphaned runs marked failed" in out
    assert idle(home)  # recorded as settled again once it was recovered


def test_a_fresh_daemon_heartbeat_is_refused(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    instance = instance_for(home / "dagster")
    instance.add_daemon_heartbeat(DaemonHeartbeat(time.time(), "SENSOR", "other-host", []))
    instance.dispose()
    assert not idle(home)
    assert main(["run", "--home", str(home)]) == 1
    assert "REPLAY_DAEMON_RUNNING" in capsys.readouterr().err


def test_a_date_behind_the_horizon_is_pruned(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    seed001.deliver_cdc(home / "landing", "B20260921-CDC", seed001.CDC_DATE, "2026-09-21T08:00:00Z")
    assert run(home, capsys)[0] == 0 and idle(home)
    (home / "replay-assets.json").write_text(json.dumps({"retention_load_dates": 1}), encoding="utf-8")
    assert pending_work(pipeline_of(home)) == "a load date is due for pruning"
    assert not idle(home)
    assert run(home, capsys)[0] == 0
    with pipeline_of(home).store.read() as unit:
        assert unit.retention.pruned_through() == seed001.BASELINE_DATE


def test_a_queued_restatement_is_published(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    seed001.deliver_cdc(home / "landing", "B20260921-CDC", seed001.CDC_DATE, "2026-09-21T08:00:00Z")
    pipeline = pipeline_of(home)
    land(pipeline, seed001.CDC_DATE)
    apply(pipeline, seed001.CDC_DATE, None)  # applied, its business dates queued, not published
    assert pending_work(pipeline) is not None and not idle(home)
    code, out = run(home, capsys)
    assert code == 0 and "restate:" in out


def test_a_writers_note_left_in_the_home_takes_the_full_path(home: Path) -> None:
    (home / "in_progress.json").write_text(json.dumps({"use_case": "apply", "pid": 2**31 - 1}))
    assert pending_work(pipeline_of(home)) is not None and not idle(home)


def test_an_idle_run_leaves_the_published_copy_as_the_last_refresh_left_it(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    evidence = home / "published" / "evidence" / "operations.parquet"
    inode = evidence.stat().st_ino
    assert run(home, capsys) == (0, IDLE_REPORT + "\n")
    assert evidence.stat().st_ino == inode  # not written again
    evidence.unlink()
    assert run(home, capsys) == (0, IDLE_REPORT + "\n")
    assert evidence.exists()  # a copy that changed is refreshed


def test_a_warehouse_write_since_the_last_refresh_reaches_the_copy(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pipeline = pipeline_of(home)
    with pipeline.store.transaction() as unit:
        unit.evidence.set_status(
            "current_orders",
            keys=[DAY],
            status=PartitionStatus.MISSING,
            reason="test",
            now=pipeline.now(),
        )
    assert run(home, capsys) == (0, IDLE_REPORT + "\n")
    with duckdb.connect(str(home / "published.duckdb"), read_only=True) as con:
        sql = "SELECT reason FROM partition_status WHERE asset = ? AND partition_key = ?"
        rows = con.execute(sql, ["current_orders", DAY]).fetchall()
    assert rows == [("test",)]
