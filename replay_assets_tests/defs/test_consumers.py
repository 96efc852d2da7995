"""SPEC 11: Dagster code that consumes the published copy reads it read-only through
dagster-duckdb's ``DuckDBResource``. The example consumer (``weekly_store_report``) materialized
through the composition root's definitions on a home that ran seed 001's loads, checked against
the published daily aggregates, also while another process holds the warehouse's writer lock."""

from __future__ import annotations

import datetime as dt
import subprocess
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import dagster as dg
import duckdb
import pytest

from replay_assets.definitions import build_definitions
from replay_assets.demo.scenarios import seed001
from replay_assets.demo.seeds import session_for

pytestmark = pytest.mark.slow  # a seed home built through the definitions (about 35 s)
SUMMED = ("order_count", "line_count", "units", "amount_minor", "cost_minor", "gross_profit_minor")
# a writer as a load holds it: the lock taken and the warehouse open read-write
HOLD_WRITER = """
import sys
from pathlib import Path
from replay_assets.core.config import Settings
from replay_assets.usecases.context import Pipeline
pipeline = Pipeline(Settings(home=Path(sys.argv[1])))
with pipeline.warehouse.connect():
    print("held", flush=True)
    sys.stdin.read()
"""


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Seed 001's baseline and first CDC delivery, run through the Dagster definitions: business
    dates on both sides of an ISO week boundary (Sunday 2026-09-20, Monday 2026-09-21)."""
    home = tmp_path_factory.mktemp("consumers") / "home"
    session = session_for(home, seed001.NOW)
    seed001.deliver_baseline(session.settings.landing)
    seed001.deliver_cdc(session.settings.landing, "B20260921-CDC-A", seed001.CDC_DATE, "2026-09-21T08:12:00Z")
    session.run()
    session.close()
    return home


def materialize_report(home: Path) -> dg.ExecuteInProcessResult:
    defs = build_definitions(session_for(home, seed001.NOW).settings)
    # the asset as the composition root binds it, with its resources
    return dg.materialize([defs.resolve_assets_def("weekly_store_report")], raise_on_error=False)


def report_of(result: dg.ExecuteInProcessResult) -> list[dict[str, Any]]:
    assert result.success
    [materialization] = result.asset_materializations_for_node("weekly_store_report")
    return [dict(record.data) for record in materialization.metadata["report"].value.records]


def expected_weeks(home: Path) -> list[dict[str, Any]]:
    """The published daily aggregates summed per store and ISO week, here in Python."""
    with duckdb.connect(str(home / "published.duckdb"), read_only=True) as con:
        daily = con.sql("SELECT * FROM daily_aggregates").pl().to_dicts()
    weeks: dict[tuple[str, str], dict[str, Any]] = defaultdict(lambda: dict.fromkeys(SUMMED, 0))
    for row in daily:
        year, week, _ = row["business_date"].isocalendar()
        totals = weeks[(f"{year}-W{week:02d}", row["store_id"])]
        for column in SUMMED:
            totals[column] += row[column]
        totals["business_days"] = totals.get("business_days", 0) + 1
    return [{"iso_week": w, "store_id": s, **totals} for (w, s), totals in sorted(weeks.items())]


def test_the_weekly_report_adds_up_the_published_daily_aggregates(home: Path) -> None:
    report = report_of(materialize_report(home))
    expected = expected_weeks(home)
    assert len({row["iso_week"] for row in expected}) >= 2  # the fixture spans a week boundary
    assert [{k: row[k] for k in expected[0]} for row in report] == expected
    for row in report:
        monday = dt.date.fromisoformat(str(row["week_start"]))
        assert monday.weekday() == 0 and row["iso_week"] == monday.strftime("%G-W%V")


def test_the_report_reads_while_another_process_holds_the_writer(home: Path) -> None:
    """A load in progress (the warehouse open read-write by another process) does not stop the
    consumer, which reads only the published copy."""
    unlocked = report_of(materialize_report(home))
    writer = subprocess.Popen(
        [sys.executable, "-c", HOLD_WRITER, str(home)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert writer.stdout is not None and writer.stdout.readline() == "held\n"
        with pytest.raises(duckdb.IOException):  # the warehouse really is held
            duckdb.connect(str(home / "warehouse.duckdb"), read_only=True).close()
        assert report_of(materialize_report(home)) == unlocked
    finally:
        writer.communicate("", timeout=60)
    assert writer.returncode == 0


def test_the_consumer_cannot_write_to_the_published_copy(home: Path) -> None:
    defs = build_definitions(session_for(home, seed001.NOW).settings)
    with defs.resources["published"].get_connection() as con:
        with pytest.raises(duckdb.InvalidInputException, match="read-only"):
            con.execute("CREATE TABLE scratch (x INTEGER)")


def test_on_an_empty_home_the_report_fails_saying_nothing_is_published(tmp_path: Path) -> None:
    result = materialize_report(tmp_path / "home")
    assert not result.success
    [failure] = [e for e in result.all_events if e.is_step_failure]
    assert "nothing is published until a load date is certified" in str(failure.step_failure_data.error)
