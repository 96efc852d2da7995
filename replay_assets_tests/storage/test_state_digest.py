"""Cost by change (issue 14 item 2): the content hash and controls kept from what each load date
changed equal the whole-state recomputation (the audit's path) as of every date, for random
histories (keys changed, deleted and revived across dates, orders whose lines change on
different dates, customers), whether they read the state before the date from history or from
the latest tables. Real DuckDB, in memory."""

from __future__ import annotations

from pathlib import Path

from hypothesis import example, given, settings
from hypothesis import strategies as st

from replay_assets.core.aggregate import Controls
from replay_assets.storage.apply import latest, state_digest
from replay_assets.storage.apply.certified import recomputed_controls
from replay_assets.storage.apply.reading import StoredSums
from replay_assets.storage.apply.recording import store_digest
from replay_assets.storage.db.sql import DuckDBSql
from replay_assets.storage.rules.digest import EMPTY, controls_by_change
from replay_assets_tests.helpers import drive
from replay_assets_tests.storage.test_bad_input import D1, D2, deliver, event, make_pipeline
from replay_assets_tests.storage.test_snapshot_scan import DAYS, customer_row, order_row, warehouse


@settings(max_examples=60, deadline=None)
@given(st.lists(order_row, max_size=25), st.lists(customer_row, max_size=8))
@example(orders=[("o1", 1, "active", 0, DAYS[1]), ("o1", 1, "active", 1, DAYS[0])], customers=[])
def test_sums_and_controls_by_change_equal_the_whole_state_as_of_every_date(
    orders: list[tuple], customers: list[tuple]
) -> None:
    con = warehouse(orders, customers)
    for table in ("order_history", "customer_history"):  # written date by date below, as applied
        con.execute(f"CREATE TEMP TABLE pending_{table} AS SELECT * FROM {table}")
        con.execute(f"DELETE FROM {table}")
    base, before = Controls(0, 0, 0, 0, 0, 0), EMPTY
    for day in DAYS:  # the latest tables hold the state before ``day`` here (advanced below)
        con.execute("INSERT INTO load_dates VALUES (?, 'identity', now(), NULL)", [day])
        for table in ("order_history", "customer_history"):
            con.execute(f"INSERT INTO {table} SELECT * FROM pending_{table} WHERE load_date = ?", [day])
        sums = before.plus(state_digest.change(con, day))
        assert sums == state_digest.full(con, day)
        assert before.plus(state_digest.change(con, day, from_latest=True)) == sums
        assert controls_by_change(DuckDBSql(con), day, base, from_latest=True) == (
            (recomputed_controls(con, day),) * 2
        )
        if day == DAYS[0]:  # the first date's shortcut: no history before it
            assert state_digest.change(con, day, first=True) == sums
            assert (
                controls_by_change(DuckDBSql(con), day, base, first=True)
                == (recomputed_controls(con, day),) * 2
            )
        before = sums
        store_digest(DuckDBSql(con), day, sums)
        assert StoredSums(DuckDBSql(con)).stored_sums(day) == sums
        by_line, by_order = controls_by_change(DuckDBSql(con), day, base)
        whole = recomputed_controls(con, day)
        assert by_line == whole and by_order == whole
        base = whole
        latest.advance(DuckDBSql(con), day)
    assert latest.differences(DuckDBSql(con)) == 0


def test_the_hash_covers_every_column_and_tombstones() -> None:
    con = warehouse([("o1", 1, "active", 10, DAYS[0]), ("o2", 1, "deleted", 5, DAYS[0])], [])
    first = state_digest.full(con, DAYS[0]).content_sha256
    for column, value in (("amount_minor", 11), ("status", "cancelled"), ("version", 99), ("store_id", "s9")):
        changed = warehouse([("o1", 1, "active", 10, DAYS[0]), ("o2", 1, "deleted", 5, DAYS[0])], [])
        changed.execute(f"UPDATE order_history SET {column} = ? WHERE order_id = 'o1'", [value])
        assert state_digest.full(changed, DAYS[0]).content_sha256 != first, column
    without_tombstone = warehouse([("o1", 1, "active", 10, DAYS[0])], [])
    assert state_digest.full(without_tombstone, DAYS[0]).content_sha256 != first


def test_a_stored_record_is_carried_forward_only_while_intact(tmp_path: Path) -> None:
    """The next date builds on the stored sums and controls of the date before only while they are
    what the journal recorded its application leaving; a tampered record is recomputed whole."""
    p = make_pipeline(tmp_path)
    deliver(p, D1, "b1", [event(1, "o1", amount_minor=100), event(2, "o2", amount_minor=50)])
    deliver(p, D2, "b2", [event(3, "o1", amount_minor=70)])
    drive(p)
    with p.warehouse.connect() as con:
        whole = (state_digest.full(con, D1), recomputed_controls(con, D1))
        assert state_digest.base(con, D1) == whole
        stored = StoredSums(DuckDBSql(con))
        assert stored.stored_sums(D1) == whole[0]
        assert stored.intact(D1, whole[0])  # so base() took the stored record
        con.execute("UPDATE snapshots SET amount_minor = amount_minor + 1 WHERE load_date = ?", [D1])
        assert stored.stored_controls(D1) != whole[1]
        assert not stored.intact(D1, whole[0])
        assert state_digest.base(con, D1) == whole  # recomputed, not the tampered row
        assert state_digest.base(con, None) == (EMPTY, Controls(0, 0, 0, 0, 0, 0))
