"""The warehouse file: migrations, the writer lock with a bounded wait, atomic transactions.

Real DuckDB files in pytest's tmp_path; the lock is an OS flock, which is per open file
description, so a second ``connect()`` in the same process contends exactly like another process.
"""

from __future__ import annotations

import time
from pathlib import Path

import duckdb
import pytest

from replay_assets.core.errors import ErrorCode, ReplayError
from replay_assets.storage.db.migrations import LANDING_VIEWS, MIGRATIONS
from replay_assets.storage.db.warehouse import Warehouse, one

CONSUMER_VIEWS = {"current_orders", "current_customers", "daily_aggregates"}
CONSUMER_TABLES = {"publications", "rejected_events", "reconciliation", "partition_status"}


class Boom(Exception):
    pass


def test_migrations_from_empty_apply_every_version_and_create_the_consumer_views(tmp_path: Path) -> None:
    wh = Warehouse(tmp_path)
    assert not wh.path.exists()
    with wh.connect() as con:
        versions = con.execute("SELECT version FROM schema_migrations ORDER BY version").fetchall()
        views = {
            r[0]
            for r in con.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_type = 'VIEW'"
            ).fetchall()
        }
        tables = {
            r[0]
            for r in con.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_type = 'BASE TABLE'"
            ).fetchall()
        }
        # the consumer views are queryable on an empty warehouse (no pointer yet: no rows)
        empty = [con.execute(f"SELECT count(*) FROM {v}").fetchall()[0][0] for v in sorted(CONSUMER_VIEWS)]
        columns = [
            r[0]
            for r in con.execute(
                "SELECT column_name FROM information_schema.columns WHERE table_name = 'current_orders' "
                "ORDER BY ordinal_position"
            ).fetchall()
        ]
    assert versions == [(version,) for version, _ in MIGRATIONS]
    assert CONSUMER_VIEWS <= views
    assert CONSUMER_TABLES <= tables
    # the landing's per-line rows: views over the tables the landing writes (v12)
    assert set(LANDING_VIEWS) <= views and set(LANDING_VIEWS.values()) <= tables
    assert empty == [0, 0, 0]
    assert columns == [
        "order_id",
        "line_no",
        "store_id",
        "customer_id",
        "product_id",
        "business_date",
        "quantity",
        "amount_minor",
        "cost_minor",
        "status",
        "version",
        "source_seq",
        "load_date",
    ]
    assert wh.path.exists()


def test_migrations_are_applied_once(tmp_path: Path) -> None:
    wh = Warehouse(tmp_path)
    with wh.connect() as con:
        first = con.execute("SELECT version, applied_at FROM schema_migrations").fetchall()
        con.execute("INSERT INTO pointers VALUES ('published_load_date', '2026-01-01')")
    with wh.connect() as con:
        again = con.execute("SELECT version, applied_at FROM schema_migrations").fetchall()
        kept = one(con, "SELECT value FROM pointers WHERE name = 'published_load_date'")
    assert again == first
    assert kept == ("2026-01-01",)


def test_second_connection_without_waiting_is_busy(tmp_path: Path) -> None:
    wh = Warehouse(tmp_path)
    with wh.connect():
        with pytest.raises(ReplayError) as busy:
            with wh.connect(timeout=0):
                pytest.fail("a second connection must not open while the first holds the lock")
        assert busy.value.code is ErrorCode.WAREHOUSE_BUSY
        assert "REPLAY_WAREHOUSE_BUSY" in str(busy.value)
        # another Warehouse object on the same home contends too (what another process would do)
        with pytest.raises(ReplayError) as other:
            with Warehouse(tmp_path, busy_timeout=0).connect():
                pass
        assert other.value.code is ErrorCode.WAREHOUSE_BUSY
    # released on exit: the next connection opens at once
    with wh.connect(timeout=0) as con:
        assert one(con, "SELECT 1") == (1,)


def test_the_wait_for_the_lock_is_bounded(tmp_path: Path) -> None:
    wh = Warehouse(tmp_path)
    with wh.connect():
        started = time.monotonic()
        with pytest.raises(ReplayError) as busy:
            with wh.connect(timeout=0.3):
                pass
        waited = time.monotonic() - started
    assert busy.value.code is ErrorCode.WAREHOUSE_BUSY
    assert 0.25 <= waited < 5


def test_lock_is_released_when_the_body_of_connect_raises(tmp_path: Path) -> None:
    wh = Warehouse(tmp_path)
    with pytest.raises(Boom):
        with wh.connect() as con:
            con.execute("INSERT INTO pointers VALUES ('p', 'autocommitted')")
            raise Boom
    with wh.connect(timeout=0) as con:
        # outside transaction() each statement autocommits: the insert before the error stays
        assert one(con, "SELECT value FROM pointers WHERE name = 'p'") == ("autocommitted",)


def test_lock_is_released_when_the_body_of_a_transaction_raises(tmp_path: Path) -> None:
    wh = Warehouse(tmp_path)
    with pytest.raises(Boom):
        with wh.transaction() as con:
            con.execute("INSERT INTO pointers VALUES ('p', 'x')")
            raise Boom
    with wh.transaction(timeout=0) as con:
        con.execute("INSERT INTO pointers VALUES ('q', 'y')")
    with wh.connect(timeout=0) as con:
        assert con.execute("SELECT name, value FROM pointers ORDER BY name").fetchall() == [("q", "y")]


def test_a_failed_sql_statement_also_releases_the_lock(tmp_path: Path) -> None:
    wh = Warehouse(tmp_path)
    with pytest.raises(duckdb.CatalogException, match=r"no_such_table"):
        with wh.transaction() as con:
            con.execute("SELECT * FROM no_such_table").fetchall()
    with wh.connect(timeout=0) as con:
        assert one(con, "SELECT count(*) FROM pointers") == (0,)


def test_a_transaction_whose_body_raises_leaves_no_rows(tmp_path: Path) -> None:
    wh = Warehouse(tmp_path)
    with wh.transaction() as con:
        con.execute("INSERT INTO watermarks VALUES ('erp', 5, '2026-01-01')")
    with pytest.raises(Boom):
        with wh.transaction() as con:
            con.execute("INSERT INTO pointers VALUES ('published_load_date', '2026-01-02')")
            con.execute("UPDATE watermarks SET watermark = 99 WHERE source = 'erp'")
            con.execute(
                "INSERT INTO reconciliation VALUES ('B1', 'erp', '2026-01-02', 1, 1, 0, 0, 0, 'APPLIED')"
            )
            # visible inside the transaction ...
            assert one(con, "SELECT count(*) FROM reconciliation") == (1,)
            raise Boom
    with wh.connect() as con:
        # ... and none of it after the rollback
        assert one(con, "SELECT count(*) FROM pointers") == (0,)
        assert one(con, "SELECT count(*) FROM reconciliation") == (0,)
        assert con.execute("SELECT * FROM watermarks").fetchall() == [("erp", 5, "2026-01-01")]


def test_a_transaction_that_returns_commits(tmp_path: Path) -> None:
    wh = Warehouse(tmp_path)
    with wh.transaction() as con:
        con.execute("INSERT INTO pointers VALUES ('published_load_date', '2026-01-02')")
    with Warehouse(tmp_path).connect() as con:
        assert one(con, "SELECT value FROM pointers") == ("2026-01-02",)


def _compressions(con: duckdb.DuckDBPyConnection, table: str, column: str) -> set[str]:
    rows = con.execute(
        """SELECT DISTINCT compression FROM pragma_storage_info(?)
            WHERE column_name = ? AND segment_type = 'VARCHAR'""",
        [table, column],
    ).fetchall()
    return {str(r[0]) for r in rows}


def _migrated_to(path: Path, version: int) -> duckdb.DuckDBPyConnection:
    """A connection to a new warehouse file with the migrations up to ``version`` applied."""
    con = duckdb.connect(str(path))
    con.execute(
        "CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL)"
    )
    for number, statements in MIGRATIONS[:version]:
        for statement in statements:
            con.execute(statement)
        con.execute("INSERT INTO schema_migrations VALUES (?, now())", [number])
    return con


def test_the_hash_columns_migrate_to_uncompressed_storage_with_every_row(tmp_path: Path) -> None:
    """A warehouse at version 10 with rows in the five tables: version 11 keeps every row and
    column, and the hash columns are written uncompressed from then on (the other columns keep
    DuckDB's choice)."""
    con = _migrated_to(tmp_path / "warehouse.duckdb", 10)
    hashes = "SELECT sha256(CAST(range AS VARCHAR)) FROM range(3000)"
    con.execute(
        f"""INSERT INTO event_registry SELECT 's', 'e' || row_number() OVER (), row_number() OVER (), h, 'D'
            FROM ({hashes}) t(h)"""
    )
    for table in ("order_history", "order_latest"):
        con.execute(
            f"""INSERT INTO {table} SELECT 'o' || row_number() OVER (), 1, 'st', 'c', 'p', '2026-01-01',
                1, 2, 1, 'active', 1, 1, h, 'D' FROM ({hashes}) t(h)"""
        )
    for table in ("customer_history", "customer_latest"):
        con.execute(
            f"""INSERT INTO {table} SELECT 'c' || row_number() OVER (), 'n', 'seg', 'active', 1, 1, h, 'D'
                FROM ({hashes}) t(h)"""
        )
    tables = ("event_registry", "order_history", "order_latest", "customer_history", "customer_latest")
    before = {t: sorted(con.execute(f"SELECT * FROM {t}").fetchall()) for t in tables}
    con.execute("CHECKPOINT")
    assert _compressions(con, "order_history", "image_sha256") != {"Uncompressed"}
    con.close()
    with Warehouse(tmp_path).connect() as con:
        assert one(con, "SELECT max(version) FROM schema_migrations") == (MIGRATIONS[-1][0],)
        after = {t: sorted(con.execute(f"SELECT * FROM {t}").fetchall()) for t in tables}
        con.execute("INSERT INTO order_history SELECT * REPLACE ('D2' AS load_date) FROM order_history")
        con.execute("CHECKPOINT")
        stored = {
            (table, column): _compressions(con, table, column)
            for table, column in (
                ("event_registry", "content_sha256"),
                ("order_history", "image_sha256"),
                ("order_latest", "image_sha256"),
                ("customer_history", "image_sha256"),
                ("customer_latest", "image_sha256"),
                ("order_history", "order_id"),
            )
        }
    assert after == before
    assert all(found == {"Uncompressed"} for (_t, column), found in stored.items() if column != "order_id")
    assert stored[("order_history", "order_id")] != {"Uncompressed"}


def test_the_landing_tables_move_behind_views_with_every_row(tmp_path: Path) -> None:
    """A warehouse at version 11 with landed rows: version 12 renames the two tables and puts
    views of the old names over them, so every reader reads the same rows."""
    con = _migrated_to(tmp_path / "warehouse.duckdb", 11)
    con.execute(
        "INSERT INTO raw_receipts VALUES ('b', 's', 'D', now(), 'f', 1, 'h', 'x', NULL), "
        "('b', 's', 'D', now(), 'f', 2, 'h2', NULL, 3)"
    )
    con.execute(
        "INSERT INTO staged_events (batch_id, source, load_date, source_file, line_number, event_id, "
        "source_seq, entity, op, key, version, event_time, content_sha256, image_sha256) "
        "VALUES ('b', 's', 'D', 'f', 2, 'e', 1, 'order_line', 'upsert', 'k', 1, 't', 'c', 'i')"
    )
    before = {view: con.execute(f"SELECT * FROM {view} ORDER BY ALL").fetchall() for view in LANDING_VIEWS}
    con.close()
    with Warehouse(tmp_path).connect() as con:
        for view, table in LANDING_VIEWS.items():
            assert con.execute(f"SELECT * FROM {view} ORDER BY ALL").fetchall() == before[view]
            assert con.execute(f"SELECT * FROM {table} ORDER BY ALL").fetchall() == before[view]
            kind = "SELECT table_type FROM information_schema.tables WHERE table_name = ?"
            assert con.execute(kind, [view]).fetchall() == [("VIEW",)]
        assert con.execute("SELECT count(*) FROM raw_payloads").fetchall() == [(2,)]
