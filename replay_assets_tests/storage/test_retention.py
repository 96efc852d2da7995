"""Retention (SPEC 5 and 10, issue 14 item 3): pruning the load dates behind the replay horizon
changes no answer inside it. Two homes fold the same random CDC stream (shuffled, duplicated,
deletes, stale versions, then a replay of old events), one keeping every load date and one
keeping the newest 1 to 3: every consumer table, every state as of a date inside the horizon,
the snapshots and the reconciliation are equal (a replayed event the pruned registry no longer
knows counts as stale instead of duplicate: SPEC 5), and what the pruned home still holds is
bounded by its horizon. Then the refusals behind the horizon, and the evidence kept.

Use cases over real DuckDB files; no Dagster.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

import duckdb
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from replay_assets.core.config import settings_from
from replay_assets.core.errors import ErrorCode, ReplayError
from replay_assets.core.plan import refuse_partial_backfill
from replay_assets.core.status import DateStatus
from replay_assets.entrypoints.cli import main
from replay_assets.storage.apply.reading import pruned_through
from replay_assets.storage.db.sql import DuckDBSql
from replay_assets.storage.landing.deliveries import write_delivery
from replay_assets.usecases.apply import apply
from replay_assets.usecases.context import Pipeline
from replay_assets.usecases.decide import decide
from replay_assets.usecases.land import land
from replay_assets.usecases.operations import Operations
from replay_assets_tests.core.strategies import histories
from replay_assets_tests.helpers import drive, settings_for
from replay_assets_tests.storage.test_bad_input import D1, D2, D3, NOW, deliver, event, rows, statuses
from replay_assets_tests.storage.test_published_state import published
from replay_assets_tests.storage.test_storage_equals_reference import NOW as STREAM_NOW
from replay_assets_tests.storage.test_storage_equals_reference import SOURCE, load_dates, ready_at

D4 = "2026-01-04"
KEEP_ALL = 35
PER_DATE = ("raw_receipts", "staged_events", "event_registry")


@st.composite
def streams(draw: st.DrawFn) -> list[list[str]]:
    """A random history delivered at least once, shuffled, over 3 to 6 load dates, then a load
    date replaying old lines."""
    lines = [c.line for c in draw(histories())]
    lines += draw(st.lists(st.sampled_from(lines), max_size=len(lines)))
    lines = draw(st.permutations(lines))
    cuts = sorted(draw(st.sets(st.integers(0, len(lines)), min_size=2, max_size=5)))
    days = [list(lines[a:b]) for a, b in itertools.pairwise([0, *cuts, len(lines)])]
    replay = draw(st.lists(st.sampled_from(lines), min_size=1, max_size=6))
    return [*days, replay]


def _home(root: Path, days: list[list[str]], keep: int) -> Pipeline:
    p = Pipeline(settings_for(root, STREAM_NOW, retention_load_dates=keep))
    for n, (day, lines) in enumerate(zip(load_dates(len(days)), days, strict=True)):
        write_delivery(p.settings.landing, SOURCE, day, f"b{n}", lines, ready_at(day))
    drive(p)
    return p


def _answers(p: Pipeline, inside: list[str]) -> dict[str, Any]:
    with p.warehouse.connect() as con:
        found: dict[str, Any] = {
            f"{macro} {d}": con.execute(f"SELECT * FROM {macro}(?) ORDER BY ALL", [d]).fetchall()
            for d in inside
            for macro in ("orders_as_of", "customers_as_of")
        }
        queries = {
            "current_orders": "SELECT * FROM current_orders ORDER BY ALL",
            "current_customers": "SELECT * FROM current_customers ORDER BY ALL",
            "aggregates": "SELECT * EXCLUDE (certified_at) FROM daily_aggregates ORDER BY ALL",
            "publications": "SELECT asset, partition_key, version, as_of_load_date, content_sha256 "
            "FROM publications ORDER BY ALL",
            "snapshots": "SELECT * FROM snapshots ORDER BY ALL",
            "reconciliation": "SELECT batch_id, load_date, source_events, accepted, rejected, "
            "skipped_duplicate + skipped_stale, status FROM reconciliation ORDER BY ALL",
            "watermarks": "SELECT * FROM watermarks ORDER BY ALL",
            "pointer": "SELECT value FROM pointers WHERE name = 'published_load_date'",
        }
        found |= {name: con.execute(sql).fetchall() for name, sql in queries.items()}
    found |= {f"published {view}": rows for view, rows in published(p.settings.home).items()}
    return found


@settings(
    max_examples=5,  # two homes each; CI draws new ones every run (suite budget)
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(days=streams(), keep=st.integers(1, 3))
def test_pruning_behind_the_horizon_changes_no_answer_inside_it(days: list[list[str]], keep: int) -> None:
    root = Path(tempfile.mkdtemp(prefix="retention-"))
    try:
        full = _home(root / "full", days, KEEP_ALL)
        pruned = _home(root / "pruned", days, keep)
        dates = load_dates(len(days))
        inside = dates[-keep:]
        answers = _answers(pruned, inside)
        assert answers == _answers(full, inside)
        assert answers["published current_orders"] == answers["current_orders"]

        behind = dates[:-keep]
        with pruned.warehouse.connect() as con:
            assert pruned_through(DuckDBSql(con)) == behind[-1]
            for table in PER_DATE:  # bounded by the horizon
                kept = {r[0] for r in con.execute(f"SELECT DISTINCT load_date FROM {table}").fetchall()}
                assert kept <= set(inside), table
            superseded = con.execute(
                """SELECT count(*) FROM (SELECT order_id, line_no FROM order_history
                WHERE load_date <= ? GROUP BY ALL HAVING count(*) > 1)""",
                [behind[-1]],
            ).fetchall()
            assert superseded == [(0,)]  # behind the horizon: each key's newest row only
            logged = con.execute("SELECT load_date FROM pruned_load_dates ORDER BY 1").fetchall()
            assert [r[0] for r in logged] == behind
            replayed = con.execute(
                "SELECT accepted FROM reconciliation WHERE batch_id = ?", [f"b{len(days) - 1}"]
            ).fetchall()
            assert replayed == [(0,)]  # the fence stops a replay the pruned registry forgot
        ops = Operations(pruned)
        assert ops.reverify("current_orders").mismatched == []
        assert ops.reverify("daily_aggregates").mismatched == []
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def pruned(tmp_path: Path) -> Pipeline:
    """Four load dates, the horizon keeping two: D1 and D2 are pruned."""
    p = Pipeline(settings_for(tmp_path / "home", NOW, retention_load_dates=2))
    p.settings.home.mkdir(parents=True)
    (p.settings.home / "replay-assets.json").write_text('{"retention_load_dates": 2}')  # for the CLI
    deliver(p, D1, "b1", [event(1, "o1"), event(2, "o2"), event(3, "o3")])
    deliver(p, D2, "b2", [event(4, "o1", amount_minor=7), event(5, "o2", op="delete"), event(2, "o2")])
    deliver(p, D3, "b3", [event(6, "o1", amount_minor=9), event(7, "o4")])
    deliver(p, D4, "b4", [event(8, "o4", op="delete"), event(3, "o3")])
    drive(p)
    return p


def test_the_pruned_dates_keep_their_evidence_and_the_state_stays_exact(pruned: Pipeline) -> None:
    assert rows(pruned, "SELECT load_date FROM pruned_load_dates ORDER BY 1") == [(D1,), (D2,)]
    assert rows(pruned, "SELECT DISTINCT load_date FROM raw_receipts ORDER BY 1") == [(D3,), (D4,)]
    files = rows(pruned, "SELECT batch_id, sha256, events FROM landed_files ORDER BY 1")
    assert [(b, n) for b, _, n in files] == [("b1", 3), ("b2", 3), ("b3", 2), ("b4", 2)]
    manifests = {p.name: p for p in pruned.settings.landing.rglob("*.jsonl")}
    for batch, digest, _ in files:  # each file's verified hash outlives its payloads
        assert digest == hashlib.sha256(manifests[f"{batch}.jsonl"].read_bytes()).hexdigest()
    assert rows(pruned, "SELECT count(*) FROM reconciliation") == [(4,)]
    assert rows(pruned, "SELECT count(*) FROM publications WHERE asset = 'current_orders'") == [(4,)]
    # o2's tombstone (its newest row, from D2) stays; o1's D1 row, superseded on D2, goes
    history = rows(pruned, "SELECT order_id, load_date, status FROM order_history ORDER BY 1, 2")
    assert history == [
        ("o1", D2, "active"),
        ("o1", D3, "active"),
        ("o2", D2, "deleted"),
        ("o3", D1, "active"),
        ("o4", D3, "active"),
        ("o4", D4, "deleted"),
    ]


def test_what_reaches_behind_the_horizon_is_refused_with_the_reason(
    pruned: Pipeline, capsys: pytest.CaptureFixture[str]
) -> None:
    home = str(pruned.settings.home)
    main(["status", "--json", "--home", home])
    assert json.loads(capsys.readouterr().out)["retention"] == [
        {"retention_load_dates": 2, "pruned_through": D2}
    ]
    main(["status", "--home", home])
    assert f"load dates up to {D2} are pruned" in capsys.readouterr().out
    out = str(pruned.settings.home.parent / "out.csv")
    assert main(["export", "current_orders", "--as-of", D2, "--home", home, "--output", out]) == 2
    assert "REPLAY_BEHIND_HORIZON" in capsys.readouterr().err
    assert main(["export", "current_orders", "--as-of", D3, "--home", home, "--output", out]) == 0
    note = ["--note", "x", "--home", home]
    assert main(["backfill", "--asset", "current_orders", "--from", D2, "--to", D4, *note]) == 2
    assert "REPLAY_BEHIND_HORIZON" in capsys.readouterr().err

    deliver(pruned, D2, "late", [event(9, "o9")], ready_at=f"{D2}T23:00:00Z")
    status, reason = statuses(pruned)[D2]
    assert status is DateStatus.LATE_DELIVERY and reason.startswith("REPLAY_BEHIND_HORIZON")
    for step in (land, lambda p, d, sealed_ok: apply(p, d, None, sealed_ok=sealed_ok)):
        with pytest.raises(ReplayError) as refused:
            step(pruned, D2, sealed_ok=True)
        assert refused.value.code is ErrorCode.BEHIND_HORIZON
    assert rows(pruned, "SELECT count(*) FROM manifests WHERE batch_id = 'late'") == [(0,)]
    assert refuse_partial_backfill(decide(pruned).plans, D3, D4, D2) is None  # nor does it hold others


def test_a_horizon_of_zero_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "replay-assets.json").write_text('{"retention_load_dates": 0}')
    assert main(["status", "--home", str(home)]) == 2
    assert "retention_load_dates" in capsys.readouterr().err
    overridden = settings_from(
        {"REPLAY_ASSETS_RETENTION_LOAD_DATES": "7"}, str(home), '{"retention_load_dates": 3}'
    )
    assert overridden.retention_load_dates == 7
    assert settings_from({}, str(home), None).retention_load_dates == 35  # SPEC 5's default


def _published_as_of(home: Path, macro: str, day: str) -> list[Any]:
    con = duckdb.connect(str(home / "published.duckdb"), read_only=True)
    try:
        return con.execute(f"SELECT * FROM {macro}(?) ORDER BY ALL", [day]).fetchall()
    finally:
        con.close()


def test_published_duckdb_answers_as_of_inside_the_horizon_and_refuses_behind_it(pruned: Pipeline) -> None:
    home = pruned.settings.home
    for day in (D3, D4):
        for macro in ("orders_as_of", "customers_as_of"):
            assert _published_as_of(home, macro, day) == rows(
                pruned, f"SELECT * FROM {macro}(?) ORDER BY ALL", [day]
            )
    assert _published_as_of(home, "orders_as_of", D4) == rows(
        pruned, "SELECT * FROM current_orders ORDER BY ALL"
    )
    with pytest.raises(duckdb.Error, match="REPLAY_BEHIND_HORIZON"):
        _published_as_of(home, "orders_as_of", D2)
    files = sorted(p.name for p in (home / "published" / "history" / "orders").iterdir())
    assert files == [
        "_schema.parquet",
        f"base-{D2}.parquet",
        f"load_date={D3}.parquet",
        f"load_date={D4}.parquet",
    ]


def test_published_duckdb_answers_as_of_every_certified_date_without_pruning(tmp_path: Path) -> None:
    p = Pipeline(settings_for(tmp_path / "home", NOW))
    deliver(p, D1, "b1", [event(1, "o1"), event(2, "o2")])
    deliver(p, D2, "b2", [event(3, "o1", amount_minor=7), event(4, "o2", op="delete")])
    drive(p)
    for day in (D1, D2):
        expected = rows(p, "SELECT * FROM orders_as_of(?) ORDER BY ALL", [day])
        assert _published_as_of(p.settings.home, "orders_as_of", day) == expected
    assert _published_as_of(p.settings.home, "orders_as_of", "2025-12-31") == []


EVIDENCE = {
    "operations": "SELECT operation_id, state, updated_at FROM operations",
    "operation_audit": "SELECT operation_id, version FROM operation_audit",
    "step_attempts": "SELECT run_id, recorded_at FROM step_attempts",
    "costs": "SELECT run_id, recorded_at FROM costs",
}


def _evidence(p: Pipeline) -> dict[str, set[tuple[Any, ...]]]:
    return {table: set(rows(p, sql)) for table, sql in EVIDENCE.items()}


def test_the_evidence_of_work_behind_the_horizon_is_pruned_and_the_unfinished_stays(tmp_path: Path) -> None:
    p = Pipeline(settings_for(tmp_path / "home", NOW, retention_load_dates=1))
    for day, batch, lines in ((D1, "b1", [event(1, "o1"), event(2, "o2")]), (D2, "b2", [event(3, "o1")])):
        deliver(p, day, batch, lines)
        drive(p)  # D1 leaves the horizon once D2 is applied: evidence of work before D1 goes
        p.sleep(3600)  # a day's work an hour of the virtual clock after the one before
    # an operation that failed before its commit and was never retried: old, but not COMPLETE
    with p.warehouse.transaction() as con:
        failed = con.execute(
            """UPDATE operations SET state = 'FAILED_PRE_COMMIT' WHERE operation_id = (
                SELECT min(operation_id) FROM operations WHERE kind NOT LIKE '%load_date')
            RETURNING operation_id"""
        ).fetchall()[0][0]
        cutoff = con.execute("SELECT applied_at FROM load_dates WHERE load_date = ?", [D2]).fetchall()[0][0]
    before = _evidence(p)
    deliver(p, D3, "b3", [event(4, "o3")])
    drive(p)  # D2 leaves the horizon: the work of D1 goes
    assert rows(p, "SELECT load_date FROM pruned_load_dates ORDER BY 1") == [(D1,), (D2,)]
    after = _evidence(p)

    gone = {(op, state, at) for op, state, at in before["operations"] if state == "COMPLETE" and at < cutoff}
    assert gone, "the work of D1 is recorded before D2 was applied"
    assert after["operations"] & gone == set()
    assert before["operations"] - gone <= after["operations"]  # newer and unfinished ones stay
    assert failed in {op for op, _, _ in after["operations"]}
    kept_ops = {op for op, _, _ in after["operations"]}
    assert {op for op, _ in after["operation_audit"]} == kept_ops  # each kept one keeps its trail
    assert {r for r in before["operation_audit"] if r[0] in kept_ops} <= after["operation_audit"]
    for table in ("step_attempts", "costs"):
        recent = {run for run, at in before[table] if at >= cutoff and run is not None}
        kept = {(run, at) for run, at in before[table] if at >= cutoff or run in recent}  # a run whole
        assert {(run, at) for run, at in after[table] if at < cutoff} == set(), table
        assert kept <= after[table], table
    assert any(at < cutoff for _, at in before["costs"])  # there was some to prune (attempts: Dagster's)
    assert rows(p, "SELECT count(*) FROM commit_markers") >= [(len(before["operations"]),)]  # fences stay
