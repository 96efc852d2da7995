"""A late delivery on a sealed load date (SPEC 10, issue 14 item 1): landed and applied in the
backfill lane, it re-applies the chain D..latest in one transaction, and the result equals a run
that had the batch on time: every load date's state, the reconciliation, the certified daily
aggregates. Random CDC streams (shuffled, duplicated, deletes, moves, stale versions); the late
batch takes lines out of a sealed date and may replay events of later dates.

Use cases over real DuckDB files; no Dagster (the backfill lane is ``sealed_ok``).
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from replay_assets.core.errors import ErrorCode, ReplayError
from replay_assets.core.status import ApplyOutcome, DateStatus
from replay_assets.entrypoints.cli import main
from replay_assets.storage.apply import latest
from replay_assets.storage.db.sql import DuckDBSql
from replay_assets.storage.landing.deliveries import write_delivery
from replay_assets.usecases.apply import apply
from replay_assets.usecases.context import Pipeline
from replay_assets.usecases.decide import decide
from replay_assets.usecases.land import land
from replay_assets_tests.core.strategies import deliveries, histories
from replay_assets_tests.helpers import drive, settings_for
from replay_assets_tests.storage import test_bad_input as bad_input
from replay_assets_tests.storage.test_bad_input import D1, D2, D3, event, facts, make_pipeline
from replay_assets_tests.storage.test_published_state import published
from replay_assets_tests.storage.test_storage_equals_reference import NOW, SOURCE, load_dates, ready_at

CUSTOMERS = "SELECT * FROM customers_as_of(?) ORDER BY ALL"
LATE_READY = "T23:00:00Z"
DONE = {
    ApplyOutcome.APPLIED,
    ApplyOutcome.RESTATED,
    ApplyOutcome.UNCHANGED,
}  # recorded or verified  # within its load date's order, after the regular batch


def _deliver(p: Pipeline, days: list[list[str]]) -> None:
    for n, (day, lines) in enumerate(zip(load_dates(len(days)), days, strict=True)):
        write_delivery(p.settings.landing, SOURCE, day, batch_id=f"b{n}", lines=lines, ready_at=ready_at(day))


def _deliver_late(p: Pipeline, day: str, lines: list[str]) -> None:
    write_delivery(p.settings.landing, SOURCE, day, batch_id="late", lines=lines, ready_at=day + LATE_READY)


def _everything(p: Pipeline, days: list[str]) -> dict[str, Any]:
    with p.warehouse.connect() as con:
        found: dict[str, Any] = {
            f"orders as of {d}": con.execute("SELECT * FROM orders_as_of(?) ORDER BY ALL", [d]).fetchall()
            for d in days
        }
        found |= {
            f"customers as of {d}": con.execute(
                "SELECT * FROM customers_as_of(?) ORDER BY ALL", [d]
            ).fetchall()
            for d in days
        }
        queries = {
            "consumer orders": "SELECT * FROM current_orders ORDER BY ALL",
            "reconciliation": "SELECT * FROM reconciliation ORDER BY ALL",
            "aggregates": "SELECT * EXCLUDE (certified_at, publication_version) "
            "FROM daily_aggregates ORDER BY ALL",
            "registry": "SELECT * FROM event_registry ORDER BY ALL",
            "snapshots": "SELECT * FROM snapshots ORDER BY ALL",
            "pointer": "SELECT value FROM pointers WHERE name = 'published_load_date'",
            "pending": "SELECT count(*) FROM restatement_queue WHERE released_at IS NULL",
        }
        found |= {name: con.execute(sql).fetchall() for name, sql in queries.items()}
        found["latest rows"] = con.execute("SELECT * FROM order_latest ORDER BY ALL").fetchall()
        found["latest rows differing from history"] = latest.differences(DuckDBSql(con))
    # the published copy, refreshed by partition through the restated chain
    found |= {f"published {name}": rows for name, rows in published(p.settings.home, days).items()}
    return found


@settings(
    max_examples=6,  # two homes each; CI draws new ones every run (suite budget)
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(st.data())
def test_a_late_batch_on_a_sealed_date_equals_the_same_batch_on_time(data: st.DataObject) -> None:
    history = data.draw(histories(), label="history")
    days = data.draw(deliveries(history), label="days")
    assume(len(days) >= 2)
    sealed = data.draw(st.integers(0, len(days) - 2), label="sealed date")
    moved = data.draw(st.sets(st.integers(0, max(len(days[sealed]) - 1, 0))), label="late lines")
    late = [line for i, line in enumerate(days[sealed]) if i in moved]
    later = [line for day in days[sealed + 1 :] for line in day]
    late += data.draw(st.lists(st.sampled_from(later), max_size=2) if later else st.just([]), label="replays")
    assume(late)
    days[sealed] = [line for i, line in enumerate(days[sealed]) if i not in moved]
    _assert_late_equals_on_time(days, sealed, late)


def _assert_late_equals_on_time(days: list[list[str]], sealed: int, late: list[str]) -> None:
    dates = load_dates(len(days))
    day = dates[sealed]
    root = Path(tempfile.mkdtemp(prefix="replay-assets-late-"))
    try:
        on_time = Pipeline(settings_for(root / "on-time", NOW))
        _deliver(on_time, days)
        _deliver_late(on_time, day, late)
        drive(on_time)

        late_run = Pipeline(settings_for(root / "late", NOW))
        _deliver(late_run, days)
        drive(late_run)
        _deliver_late(late_run, day, late)
        status = {p.load_date: p.status for p in decide(late_run).plans}[day]
        assert status is DateStatus.LATE_DELIVERY
        with pytest.raises(ReplayError) as sealed_error:
            land(late_run, day)  # outside the backfill lane it is refused, as before
        assert sealed_error.value.code is ErrorCode.NOT_READY
        land(late_run, day, sealed_ok=True)
        assert apply(late_run, day, None, sealed_ok=True).status is ApplyOutcome.RESTATED
        chained = facts(late_run)
        for d in dates[sealed + 1 :]:  # the backfill's later partitions: already re-applied
            assert apply(late_run, d, None, sealed_ok=True).status in DONE
        assert facts(late_run) == chained  # they change nothing (journal evidence aside)
        drive(late_run)  # publishes the restated business dates

        assert {p.load_date: p.status for p in decide(late_run).plans}[day] is DateStatus.APPLIED
        found = _everything(late_run, dates)
        assert found["latest rows differing from history"] == 0  # the restated chain kept them
        assert found["published current_orders"] == found["consumer orders"]
        for d in dates:
            assert found[f"published orders as of {d}"] == found[f"orders as of {d}"]
        assert found == _everything(on_time, dates)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_a_late_batch_that_moves_a_later_dates_version_earlier_rewrites_that_dates_as_of_rows() -> None:
    """The late batch carries the version a later date applied (a replay): after the chain, that
    date's history holds no row for the key and the state's hash is unchanged, yet the published
    as-of rows of that date must lose the row too."""
    days = [
        [event(1, "o0", 1, version=41)],
        [],
        [event(4, "o0", 2, version=2, amount_minor=229)],
        [event(3, "o0", 2, version=42, amount_minor=770)],
    ]
    late = [event(2, "o0", 2, version=1), event(4, "o0", 2, version=2, amount_minor=229)]
    _assert_late_equals_on_time(days, 1, late)


# --------------------------------------------------------------------------- a named case


def late_scenario(home: Path, *, on_time: bool) -> Pipeline:
    """D1..D3 applied; a correction for D2 (a move to another store and business date, a delete,
    a stale replay under a new event id) delivered after D3, or on time."""
    p = make_pipeline(home)
    bad_input.deliver(p, D1, "b1", [event(1, "o1"), event(2, "o2")])
    bad_input.deliver(p, D2, "b2", [event(3, "o1", version=2, amount_minor=200)])
    bad_input.deliver(p, D3, "b3", [event(4, "o3")])
    correction = [
        event(5, "o1", version=5, store_id="s2", business_date="2026-01-02"),
        event(6, "o2", version=3, op="delete"),
        event(7, "o1", version=1, event_id="replayed-o1"),
    ]
    if on_time:
        bad_input.deliver(p, D2, "late", correction, ready_at=f"{D2}T23:00:00Z")
    drive(p)
    if not on_time:
        bad_input.deliver(p, D2, "late", correction, ready_at=f"{D2}T23:00:00Z")
    return p


def test_a_backfill_that_does_not_cover_the_chain_is_refused_before_anything_mutates(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    p = late_scenario(tmp_path / "home", on_time=False)
    plan = {x.load_date: x for x in decide(p).plans}[D2]
    assert plan.status is DateStatus.LATE_DELIVERY
    assert f"backfill --from {D2} --to {D3}" in plan.reason  # status names the range
    before = facts(p)
    for first, last in ((D3, D3), (D2, D2), (D1, D2)):
        args = ["--asset", "current_orders", "--from", first, "--to", last, "--note", "partial"]
        code = main(["backfill", *args, "--home", str(p.settings.home)])
        assert code == 2
        assert f"--from {D2} --to {D3}" in capsys.readouterr().err
    assert facts(p) == before
    assert not (p.settings.home / "dagster").exists()  # refused before any Dagster instance


def test_the_named_correction_late_equals_on_time_and_restates_only_what_it_changed(tmp_path: Path) -> None:
    on_time = late_scenario(tmp_path / "on-time", on_time=True)
    late_run = late_scenario(tmp_path / "late", on_time=False)
    with late_run.warehouse.connect() as con:
        published_before = con.execute(
            "SELECT partition_key, max(version) FROM publications WHERE asset = 'daily_aggregates' GROUP BY 1"
        ).fetchall()
    land(late_run, D2, sealed_ok=True)
    result = apply(late_run, D2, None, sealed_ok=True)
    assert result.status is ApplyOutcome.RESTATED
    assert set(result.affected_business_dates) == {"2026-01-01", "2026-01-02"}
    drive(late_run)
    dates = [D1, D2, D3]
    assert _everything(late_run, dates) == _everything(on_time, dates)
    with late_run.warehouse.connect() as con:
        published_after = con.execute(
            "SELECT partition_key, max(version) FROM publications WHERE asset = 'daily_aggregates' GROUP BY 1"
        ).fetchall()
    changed = {k for k, v in published_after} - {k for k, v in published_before if (k, v) in published_after}
    assert changed == {"2026-01-01", "2026-01-02"}  # exactly the business dates the chain changed


def test_two_late_deliveries_in_one_chain_are_applied_by_the_first_dates_backfill(tmp_path: Path) -> None:
    """Late batches for D1 and D2 while D3 is applied: D1's re-application lands D2's late batch
    too and re-applies D1..D3 once; the result equals both batches on time."""
    homes = {}
    for name, on_time in (("on-time", True), ("late", False)):
        p = make_pipeline(tmp_path / name)
        bad_input.deliver(p, D1, "b1", [event(1, "o1"), event(2, "o2")])
        bad_input.deliver(p, D2, "b2", [event(3, "o1", version=2, amount_minor=200)])
        bad_input.deliver(p, D3, "b3", [event(4, "o3")])
        late = {
            D1: [event(5, "o2", version=9, op="delete")],
            D2: [event(6, "o1", version=3, store_id="s2"), event(7, "o3", version=1, event_id="early-o3")],
        }
        if on_time:
            for day, lines in late.items():
                bad_input.deliver(p, day, f"late-{day}", lines, ready_at=f"{day}T23:00:00Z")
        drive(p)
        if not on_time:
            for day, lines in late.items():
                bad_input.deliver(p, day, f"late-{day}", lines, ready_at=f"{day}T23:00:00Z")
            with pytest.raises(ReplayError):
                apply(p, D1, None)  # outside the backfill lane: refused, and nothing is landed
            assert bad_input.rows(p, "SELECT batch_id FROM manifests WHERE batch_id LIKE 'late%'") == []
            land(p, D1, sealed_ok=True)
            assert apply(p, D1, None, sealed_ok=True).status is ApplyOutcome.RESTATED
            drive(p)
        homes[name] = p
    assert _everything(homes["late"], [D1, D2, D3]) == _everything(homes["on-time"], [D1, D2, D3])
