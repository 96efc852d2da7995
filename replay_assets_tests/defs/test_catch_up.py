"""Catch-up: when several load dates are ready, ``replay-assets run`` applies them in one Dagster
run, in date order, each its own landing and journaled application, and reports each date on its
own; the tables equal those of one run per date, and a failure on a date leaves the dates before
it applied and published, nothing of it."""

from collections import Counter
from pathlib import Path

import dagster as dg
import duckdb
import pytest

from replay_assets.defs.catch_up import CATCH_UP_JOB
from replay_assets.entrypoints.session import Session
from replay_assets.usecases.context import Pipeline
from replay_assets.usecases.operations import Operations
from replay_assets_tests.defs.test_lanes_daemon import CONSUMER_SQL, DAYS, NOW, deliver
from replay_assets_tests.helpers import drive, settings_for

# the tables whose rows a catch-up and one run per date must leave equal, less the columns that
# name a run, an operation or a wall-clock figure
TABLES = (
    "order_history",
    "customer_history",
    "order_latest",
    "customer_latest",
    "snapshots",
    "state_digests",
    "publications",
    "aggregate_versions",
    "pointers",
    "reconciliation",
    "watermarks",
    "event_registry",
    "restatement_queue",
    "load_dates",
    "rejected_events",
)
VOLATILE = ("run_id", "operation_id", "released_by", "seconds", "_at", "attempt", "path")


def _rows(pipeline: Pipeline) -> dict[str, list[str]]:
    with pipeline.warehouse.connect() as con:
        found: dict[str, list[str]] = {}
        for table in TABLES:
            columns = [
                c
                for (c,) in con.execute(
                    "SELECT column_name FROM information_schema.columns WHERE table_name = ? "
                    "ORDER BY ordinal_position",
                    [table],
                ).fetchall()
                if not any(v in c for v in VOLATILE)
            ]
            rows = con.table(table).select(*columns).fetchall()
            found[table] = sorted(repr(r) for r in rows)
    return found


def _published(home: Path) -> dict[str, list[tuple[object, ...]]]:
    con = duckdb.connect(str(home / "published.duckdb"), read_only=True)
    try:
        return {name: con.execute(sql).fetchall() for name, sql in CONSUMER_SQL.items()}
    finally:
        con.close()


def _materialized(instance: dg.DagsterInstance, run_id: str) -> dict[str, list[str]]:
    by_asset: dict[str, list[str]] = {}
    for entry in instance.all_logs(run_id, of_type=dg.DagsterEventType.ASSET_MATERIALIZATION):
        m = entry.asset_materialization
        assert m is not None
        by_asset.setdefault(m.asset_key.to_user_string(), []).append(str(m.partition))
    return by_asset


def _per_date(home: Path, days: list[str]) -> Pipeline:
    """The reference: the same deliveries applied one load date at a time (no Dagster)."""
    pipeline = Pipeline(settings_for(home, NOW))
    deliver(pipeline.settings.landing, days)
    drive(pipeline)
    return pipeline


def _catch_up_runs(session: Session) -> list[dg.DagsterRun]:
    return [r for r in session.instance.get_runs() if r.job_name == CATCH_UP_JOB]


def test_ready_load_dates_apply_in_one_run_equal_to_one_run_per_date(tmp_path: Path) -> None:
    session = Session(settings_for(tmp_path / "home", NOW), tmp_path / "home" / "dagster")
    deliver(session.settings.landing, DAYS)
    try:
        assert not session.run().failed
        runs = session.instance.get_runs()
        (catch_up,) = _catch_up_runs(session)
        assert [r.tags["replay/requested_by"] for r in runs].count("source_manifest_sensor") == 1
        assert catch_up.tags["dagster/asset_partition_range_start"] == DAYS[0]
        assert catch_up.tags["dagster/asset_partition_range_end"] == DAYS[-1]
        materialized = _materialized(session.instance, catch_up.run_id)
        for asset in ("raw_receipts", "current_orders", "current_customers"):
            assert materialized[asset] == DAYS, asset  # each date once, in order
        reference = _per_date(tmp_path / "reference", DAYS)
        assert _rows(session.pipeline) == _rows(reference)
        assert _published(tmp_path / "home") == _published(tmp_path / "reference")
    finally:
        session.close()


@pytest.mark.slow  # three attempts of a catch-up run
def test_a_retried_catch_up_reports_each_date_once(tmp_path: Path) -> None:
    settings = settings_for(tmp_path / "home", NOW, fail_once="current_state", retry_backoff_seconds=0.0)
    session = Session(settings, tmp_path / "home" / "dagster")
    days = DAYS[:2]  # each date's apply fails once: the first attempt on the first, the next on the second
    deliver(session.settings.landing, days)
    try:
        assert not session.run().failed
        (catch_up,) = _catch_up_runs(session)
        attempts = Operations(session.pipeline).step_attempts(catch_up.run_id)
        failed = [(step, key) for step, key, _attempt, outcome, _detail in attempts if outcome == "FAILED"]
        assert failed == [("current_state", day) for day in days]
        materialized = _materialized(session.instance, catch_up.run_id)
        for asset in ("raw_receipts", "current_orders", "current_customers"):
            assert materialized[asset] == days, asset  # each date once, though attempts repeat
        evaluations = Counter(
            (
                e.asset_check_evaluation.asset_key,
                e.asset_check_evaluation.check_name,
                e.asset_check_evaluation.partition,
            )
            for e in session.instance.all_logs(
                catch_up.run_id, of_type=dg.DagsterEventType.ASSET_CHECK_EVALUATION
            )
            if e.asset_check_evaluation is not None
        )
        assert evaluations and set(evaluations.values()) == {1}
        assert _rows(session.pipeline) == _rows(_per_date(tmp_path / "reference", days))
    finally:
        session.close()


def _corrupt(landing: Path, day: str) -> None:
    """Change one byte of the day's delivered file, keeping its size: its sha256 no longer
    matches the manifest, which landing finds (BLOCKED_UPSTREAM)."""
    (data,) = [p for p in (landing / "erp" / day).iterdir() if not p.name.endswith(".manifest.json")]
    text = data.read_text(encoding="utf-8")
    assert "north" in text
    data.chmod(0o644)
    data.write_text(text.replace("north", "nortx", 1), encoding="utf-8")


@pytest.mark.parametrize("failing", [2])
def test_a_failure_mid_range_leaves_the_dates_before_it_applied_and_published(
    tmp_path: Path, failing: int
) -> None:
    session = Session(settings_for(tmp_path / "home", NOW), tmp_path / "home" / "dagster")
    deliver(session.settings.landing, DAYS)
    _corrupt(session.settings.landing, DAYS[failing])
    try:
        assert session.run().failed
        (catch_up,) = _catch_up_runs(session)
        assert catch_up.status is dg.DagsterRunStatus.FAILURE
        materialized = _materialized(session.instance, catch_up.run_id)
        before = DAYS[:failing]
        assert materialized.get("current_orders", []) == before  # the run claims only what it applied
        assert materialized.get("raw_receipts", []) == before
        reference = _per_date(tmp_path / "reference", before)
        assert _published(tmp_path / "home") == _published(tmp_path / "reference")
        with session.pipeline.warehouse.connect() as con:
            seen = con.execute(
                "SELECT count(*) FROM raw_receipts WHERE load_date >= ?", [DAYS[failing]]
            ).fetchall()
            assert seen == [(0,)]  # nothing of the failing date
        mine, theirs = _rows(session.pipeline), _rows(reference)
        for table in ("order_history", "order_latest", "snapshots", "publications", "aggregate_versions"):
            assert mine[table] == theirs[table], table
    finally:
        session.close()


@pytest.mark.slow  # the catch-up is killed in a child process
@pytest.mark.parametrize("point", ["state.after_commit#2", "land.before_commit#3"])
def test_a_catch_up_killed_mid_range_then_rerun_equals_an_uninterrupted_one(
    tmp_path: Path, point: str
) -> None:
    """Killed after the second date committed (the copy not yet refreshed), or while landing the
    third: the rerun ends where an uninterrupted catch-up ends, the published copy included."""
    reference = Session(settings_for(tmp_path / "reference", NOW), tmp_path / "reference" / "dagster")
    deliver(reference.settings.landing, DAYS)
    try:
        assert not reference.run().failed
        expected = _rows(reference.pipeline)
    finally:
        reference.close()
    home = tmp_path / "home"
    session = Session(settings_for(home, NOW), home / "dagster")
    deliver(session.settings.landing, DAYS)
    try:
        assert session.run_in_subprocess(fail_point=point) == -9, f"{point} was never reached"
        assert not session.run().failed
        killed, finished = _catch_up_runs(session)[-1], _catch_up_runs(session)[0]  # newest first
        assert killed.status is dg.DagsterRunStatus.FAILURE  # orphaned: marked failed by the rerun
        assert finished.status is dg.DagsterRunStatus.SUCCESS  # the rest of the range
        assert _rows(session.pipeline) == expected
        assert _published(home) == _published(tmp_path / "reference")
    finally:
        session.close()
