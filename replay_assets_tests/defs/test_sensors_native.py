"""Sensors a Dagster user can trust (SPEC 4, 11): a tick reads only new or changed manifests (its
cursor read back), requests every ready load date in one tick and in order, says why every other
date waits (skip message and the tick's log), and reads through the reader, so it answers while
another process holds the warehouse. Real homes, real DuckDB, real sensor evaluations."""

from __future__ import annotations

import dataclasses
import datetime as dt
import itertools
import os
import shutil
from pathlib import Path

import dagster as dg
import pytest

from replay_assets.core.status import ApplyOutcome, DateStatus
from replay_assets.definitions import build_definitions
from replay_assets.defs.resources import ReplayResource
from replay_assets.defs.sensors import apply_run_key
from replay_assets.entrypoints.runner import PROJECT_INSTANCE_CONFIG
from replay_assets.storage.landing.deliveries import write_delivery
from replay_assets.usecases.apply import apply
from replay_assets.usecases.context import Pipeline
from replay_assets.usecases.decide import decide
from replay_assets.usecases.land import land
from replay_assets.usecases.sensor_cursors import sense
from replay_assets_tests.defs.test_lanes_daemon import TERMINAL, runs_and_log, services, wait_for
from replay_assets_tests.helpers import drive, settings_for
from replay_assets_tests.storage.test_bad_input import event
from replay_assets_tests.test_readers import writer_holding

NOW = "2026-01-20T12:00:00Z"
FIRST = dt.date(2025, 12, 15)  # the history spans two months: each month has its own digest
HISTORY = [(FIRST + dt.timedelta(n)).isoformat() for n in range(30)]  # through 2026-01-13


def deliver(p: Pipeline, day: str, batch: str, seq: int, order: str = "") -> Path:
    line = event(seq, order or f"o{seq}", business_date=day)
    return write_delivery(p.settings.landing, "erp", day, batch, [line], f"{day}T06:00:00Z")


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Thirty load dates delivered and applied (built once; each test copies it)."""
    home = tmp_path_factory.mktemp("history")
    p = Pipeline(settings_for(home, NOW))
    for n, day in enumerate(HISTORY):
        deliver(p, day, f"B{n:02d}", 10 + n)
    drive(p)
    return home


@pytest.fixture
def home(history: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "home"
    shutil.copytree(history, copy, symlinks=True)
    return copy


def problems(decision) -> dict[str, tuple[str, str]]:  # type: ignore[no-untyped-def]
    """Every date the sensor reports: not applied, or applied with something to say."""
    return {
        p.load_date: (p.status, p.reason)
        for p in decision.plans
        if p.status is not DateStatus.APPLIED or p.reason
    }


@pytest.mark.slow  # thirty load dates applied first
def test_a_tick_reads_only_new_or_changed_manifests_and_still_notices_late_replaced_and_removed(
    home: Path,
) -> None:
    p = Pipeline(settings_for(home, NOW))
    first, cursor = sense(p, None)
    assert first.parsed == len(HISTORY) and not first.ready  # no cursor: everything read once
    quiet, cursor = sense(p, cursor)
    assert quiet.parsed <= 1 and problems(quiet) == {}  # only the newest date is read again
    assert len(cursor) < 400  # the cursor stays small: Dagster stores it with every tick

    new_day = "2026-01-14"
    deliver(p, new_day, "B-new", 100)
    fresh, cursor = sense(p, cursor)
    assert fresh.parsed <= 2 and [r.load_date for r in fresh.ready] == [new_day]

    late = HISTORY[3]  # a sealed date in the first month: that month is read again, not all
    deliver(p, late, "B-late", 200, order="o-late")
    noticed, cursor = sense(p, cursor)
    assert noticed.parsed <= 17 + 2
    assert problems(noticed)[late][0] is DateStatus.LATE_DELIVERY
    assert problems(noticed) == problems(decide(p))  # what a full read of the landing area says
    again, cursor = sense(p, cursor)
    assert problems(again) == problems(noticed) and again.parsed <= 3

    replaced = HISTORY[20]  # a manifest rewritten with other content on a settled date
    manifest = next((p.settings.landing / "erp" / replaced).glob("*.manifest.json"))
    manifest.write_text(manifest.read_text().replace("T06:00:00", "T06:00:01"))
    changed, cursor = sense(p, cursor)
    assert "REPLAY_BATCH_ID_REUSED" in problems(changed)[replaced][1]  # same id, other content
    assert problems(changed) == problems(decide(p))

    removed = HISTORY[25]
    os.unlink(next((p.settings.landing / "erp" / removed).glob("*.manifest.json")))
    gone, cursor = sense(p, cursor)
    assert problems(gone) == problems(decide(p))


def evaluate(defs: dg.Definitions, name: str, settings, cursor: str | None = None) -> dg.SensorResult:  # type: ignore[no-untyped-def]
    sensor = defs.resolve_sensor_def(name)
    resources = {"replay": ReplayResource.for_settings(settings)}
    with (
        dg.DagsterInstance.ephemeral() as instance,
        dg.build_sensor_context(resources=resources, sensor_name=name, cursor=cursor, instance=instance) as c,
    ):
        result = sensor(c)
    assert isinstance(result, dg.SensorResult)
    return result


def test_a_backlog_is_requested_in_one_tick_in_order_and_waiting_dates_are_explained(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    settings = settings_for(tmp_path, NOW)
    p = Pipeline(settings)
    backlog = HISTORY[:5]
    for n, day in enumerate(backlog):
        deliver(p, day, f"B{n}", 10 + n)
    gap_after = (dt.date.fromisoformat(backlog[-1]) + dt.timedelta(days=2)).isoformat()
    deliver(p, gap_after, "B-after-gap", 50)  # the day before it never arrives: MISSING
    result = evaluate(build_definitions(settings), "source_manifest_sensor", settings)
    assert [r.partition_key for r in result.run_requests] == backlog
    missing = (dt.date.fromisoformat(backlog[-1]) + dt.timedelta(days=1)).isoformat()
    logged = capfd.readouterr().err
    assert f"{missing} MISSING: no manifest from source erp for {missing}" in logged
    assert f"{gap_after} DELAYED: waiting behind load date {missing}" in logged


def test_a_refused_date_is_a_skip_naming_its_reason_in_the_message_and_the_log(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    settings = settings_for(tmp_path, NOW)
    p = Pipeline(settings)
    deliver(p, HISTORY[0], "B0", 10)
    drive(p)
    deliver(p, HISTORY[1], "B0", 11)  # the batch id of another date, reused: refused, never run
    result = evaluate(build_definitions(settings), "source_manifest_sensor", settings)
    assert not result.run_requests
    reason = str(result.skip_reason)
    assert f"{HISTORY[1]} BLOCKED: REPLAY_BATCH_ID_REUSED" in reason
    assert f"{HISTORY[1]} BLOCKED: REPLAY_BATCH_ID_REUSED" in capfd.readouterr().err


def test_sensors_answer_while_another_process_holds_the_writer(tmp_path: Path) -> None:
    settings = dataclasses.replace(settings_for(tmp_path, NOW), lock_timeout_seconds=0)
    p = Pipeline(settings)
    deliver(p, HISTORY[0], "B0", 10, order="o1")
    drive(p)
    deliver(p, HISTORY[0], "B0-again", 11, order="o1")  # restates the latest date: ready again
    deliver(p, HISTORY[1], "B1", 12)
    defs = build_definitions(settings)
    with writer_holding(tmp_path, HISTORY[1]):
        result = evaluate(defs, "source_manifest_sensor", settings)
        assert [r.partition_key for r in result.run_requests] == HISTORY[:2]
        restate = evaluate(defs, "restatement_sensor", settings)
        assert "REPLAY_WAREHOUSE_BUSY" not in str(restate.skip_reason)


def test_the_restatement_sensor_reads_its_cursor_back(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    settings = settings_for(tmp_path, NOW)
    p = Pipeline(settings)
    deliver(p, HISTORY[0], "B0", 10)
    land(p, HISTORY[0])
    apply(p, HISTORY[0], None)  # applied, its business date queued, not yet published
    defs = build_definitions(settings)
    first = evaluate(defs, "restatement_sensor", settings)
    [request] = first.run_requests
    assert f"business dates {HISTORY[0]}..{HISTORY[0]}: new" in capfd.readouterr().err
    again = evaluate(defs, "restatement_sensor", settings, cursor=first.cursor)
    assert [r.run_key for r in again.run_requests] == [request.run_key]  # `run` retries from it
    assert f"business dates {HISTORY[0]}..{HISTORY[0]}: requested before" in capfd.readouterr().err


def test_a_date_whose_run_failed_is_requested_again_under_a_new_key_once_ready(tmp_path: Path) -> None:
    """Both dates are requested in one tick; when the second runs first (or after the first
    failed) it is refused as a failed candidate. Once the first applies, the second is ready
    again and gets a new run key: the daemon never requests a key twice."""
    p = Pipeline(settings_for(tmp_path, NOW))
    deliver(p, HISTORY[0], "B0", 10)
    deliver(p, HISTORY[1], "B1", 11)
    before, _ = sense(p, None)
    keys = {plan.load_date: apply_run_key(before, plan) for plan in before.ready}
    assert list(keys) == HISTORY[:2]
    land(p, HISTORY[1])
    assert apply(p, HISTORY[1], None).status is ApplyOutcome.FAILED_CANDIDATE
    refused, _ = sense(p, None)
    assert [plan.load_date for plan in refused.ready] == [HISTORY[0]]
    land(p, HISTORY[0])
    apply(p, HISTORY[0], None)
    after, _ = sense(p, None)
    [second] = after.ready
    assert second.load_date == HISTORY[1] and apply_run_key(after, second) != keys[HISTORY[1]]


@pytest.mark.slow
def test_under_the_daemon_a_backlog_is_requested_by_one_tick_and_lands_in_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fresh instance, four load dates waiting: the real daemon's first tick requests all four,
    the queue starts them one at a time in date order (pool granularity ``run``), all succeed."""
    home = tmp_path / "home"
    (home / "dagster").mkdir(parents=True)
    (home / "dagster" / "dagster.yaml").write_bytes(PROJECT_INSTANCE_CONFIG.read_bytes())
    p = Pipeline(settings_for(home, NOW))
    backlog = HISTORY[:4]
    for n, day in enumerate(backlog):
        deliver(p, day, f"B{n}", 10 + n)
    env = {
        **os.environ,
        "REPLAY_ASSETS_HOME": str(home),
        "DAGSTER_HOME": str(home / "dagster"),
        "REPLAY_ASSETS_NOW": NOW,
        "REPLAY_ASSETS_SENSOR_INTERVAL_SECONDS": "1",
    }
    for key in ("REPLAY_ASSETS_HOME", "DAGSTER_HOME", "REPLAY_ASSETS_NOW"):
        monkeypatch.setenv(key, env[key])
    applies = dg.RunsFilter(job_name="apply_load_date_job")
    with services(env):
        instance = dg.DagsterInstance.get()

        def landed() -> bool:
            runs = instance.get_runs(filters=applies)
            return len(runs) >= len(backlog) and all(r.status in TERMINAL for r in runs)

        wait_for(
            landed, 420, "the backlog's runs to finish", lambda: runs_and_log(instance, home / "dagster")
        )
        records = sorted(instance.get_run_records(filters=applies), key=lambda r: r.start_time or 0)
        [state] = [s for s in instance.all_instigator_state() if s.name == "source_manifest_sensor"]
        ticks = instance.get_ticks(state.instigator_origin_id, state.selector_id)
        instance.dispose()
    assert [r.dagster_run.status for r in records] == [dg.DagsterRunStatus.SUCCESS] * len(backlog)
    assert [r.dagster_run.tags["dagster/partition"] for r in records] == backlog
    for earlier, later in itertools.pairwise(records):
        assert earlier.end_time is not None and later.start_time is not None
        assert later.start_time >= earlier.end_time  # one writer run at a time, in date order
    by_tick = [set(t.run_ids) for t in ticks if t.run_ids]
    assert {r.dagster_run.run_id for r in records} in by_tick  # all four from one tick
