"""The latest tables (each key's newest history row, ``storage/apply/latest.py``): kept by the
application, the restatement chain and pruning (the late-delivery, retention and differential
property tests check them against history), built by the migration for a home that predates
them, and audited by ``reconcile``, which flags a drifted table on the pointer's date."""

from __future__ import annotations

from pathlib import Path

import pytest

from replay_assets.entrypoints.cli import main
from replay_assets.storage.apply import latest
from replay_assets.storage.db.migrations import LANDING_VIEWS
from replay_assets.storage.db.sql import DuckDBSql
from replay_assets.storage.db.warehouse import migrate
from replay_assets.usecases.context import Pipeline
from replay_assets.usecases.operations import Operations
from replay_assets_tests.helpers import drive
from replay_assets_tests.storage.test_bad_input import D1, D2, deliver, event, make_pipeline
from replay_assets_tests.storage.test_snapshot_scan import DAYS, warehouse


@pytest.fixture
def applied(tmp_path: Path) -> Pipeline:
    p = make_pipeline(tmp_path)
    deliver(p, D1, "b1", [event(1, "o1", amount_minor=100), event(2, "o2", amount_minor=50)])
    deliver(p, D2, "b2", [event(3, "o1", amount_minor=70), event(4, "o2", op="delete")])
    drive(p)
    return p


def test_they_hold_each_keys_newest_row_tombstones_included(applied: Pipeline) -> None:
    with applied.warehouse.connect() as con:
        rows = con.execute(
            "SELECT order_id, status, amount_minor, load_date FROM order_latest ORDER BY 1"
        ).fetchall()
        assert rows == [("o1", "active", 70, D2), ("o2", "deleted", None, D2)]
        assert latest.differences(DuckDBSql(con)) == 0


def test_a_home_that_predates_them_gets_them_built_from_history(applied: Pipeline) -> None:
    with applied.warehouse.connect() as con:
        expected = con.execute("SELECT * FROM order_latest ORDER BY ALL").fetchall()
        con.execute("DROP VIEW raw_payloads")  # what v10 creates
        for view, table in LANDING_VIEWS.items():  # v12's views, and v13's rows in files, as tables
            con.execute(f"CREATE TABLE {view}_v7 AS SELECT * FROM {view}")
            con.execute(f"DROP VIEW {view}")
            con.execute(f"DROP TABLE {table}")
            con.execute(f"ALTER TABLE {view}_v7 RENAME TO {view}")
        con.execute("DROP TABLE landing_segments")
        con.execute("ALTER TABLE raw_receipts DROP COLUMN rendering")
        con.execute("ALTER TABLE raw_receipts ALTER COLUMN payload SET NOT NULL")
        for table in ("upcast_events", "batch_relandings", "source_records"):  # what v9 creates
            con.execute(f"DROP TABLE {table}")
        con.execute("ALTER TABLE load_date_attempts DROP COLUMN seq")
        con.execute("ALTER TABLE restatement_queue DROP COLUMN released_by")
        con.execute("DROP SEQUENCE attempt_seq")
        con.execute(
            "INSERT INTO load_date_attempts (load_date, identity, status, reason, attempted_at) "
            "VALUES ('2026-01-03', 'i', 'BLOCKED', 'r', now()), ('2026-01-03', 'i', 'READY', 'r', now())"
        )
        for table in ("order_latest", "customer_latest", "latest_changes"):  # what v8 creates
            con.execute(f"DROP TABLE {table}")
        con.execute("DELETE FROM schema_migrations WHERE version >= 8")
        migrate(con)
        assert con.execute("SELECT * FROM order_latest ORDER BY ALL").fetchall() == expected
        assert latest.differences(DuckDBSql(con)) == 0
        # v9 numbers the attempts already written, so their order stays decidable
        numbered = con.execute("SELECT count(DISTINCT seq), count(*) FROM load_date_attempts").fetchall()
        assert numbered == [(2, 2)]
        # v10: receipts landed before keep their payloads; the view gives them as they are
        payloads = con.execute("SELECT count(*) FROM raw_payloads WHERE sha256(payload) = payload_sha256")
        assert payloads.fetchall() == con.execute("SELECT count(*) FROM raw_receipts").fetchall()


def test_reconcile_flags_latest_tables_that_drifted_from_history(
    applied: Pipeline, capsys: pytest.CaptureFixture[str]
) -> None:
    assert Operations(applied).reverify("current_orders").mismatched == []
    with applied.warehouse.connect() as con:
        con.execute("UPDATE order_latest SET amount_minor = 71 WHERE order_id = 'o1'")
    verdict = Operations(applied).reverify("current_orders")
    assert verdict.mismatched == [D2]
    assert "latest tables differ from history's newest rows by 2 rows" in verdict.reasons[D2]
    assert main(["reconcile", "--home", str(applied.settings.home)]) == 1
    assert "latest tables differ" in capsys.readouterr().out


def test_a_date_re_applied_under_later_ones_keeps_each_keys_newest_row() -> None:
    """A backfill may fold a date again while later dates stay applied: each key the date wrote
    keeps its newest row, a later date's where it has one; what it changed is logged."""
    con = warehouse([("o1", 1, "active", 10, DAYS[0]), ("o1", 1, "active", 20, DAYS[1])], [])
    for day in DAYS[:2]:
        latest.advance(DuckDBSql(con), day)
    con.execute("DELETE FROM order_history WHERE load_date = ?", [DAYS[0]])
    latest.retract(DuckDBSql(con), DAYS[0])
    con.execute(
        "INSERT INTO order_history SELECT * REPLACE ('o2' AS order_id, ? AS load_date) FROM order_history",
        [DAYS[0]],
    )  # the date again, now writing o2 only
    before = latest.generation(DuckDBSql(con))
    latest.advance(DuckDBSql(con), DAYS[0])
    assert latest.differences(DuckDBSql(con)) == 0
    assert con.execute("SELECT order_id, load_date FROM order_latest ORDER BY 1").fetchall() == [
        ("o1", DAYS[1]),
        ("o2", DAYS[0]),
    ]
    assert latest.changed_parts(DuckDBSql(con), before) == {"orders": {"2026-01-01"}, "customers": set()}
