"""The streamed snapshot scan (certification in parts) equals the whole-frame computation: the
same content hash, controls and row count, whatever the part size, including orders whose
lines straddle a part boundary."""

from __future__ import annotations

import duckdb
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from replay_assets.core.aggregate import content_sha256, controls_of
from replay_assets.core.events import canonical_json, sha256_text
from replay_assets.storage.apply import snapshot_scan
from replay_assets.storage.db.warehouse import migrate

DAYS = ["2026-01-01", "2026-01-02", "2026-01-03"]
order_row = st.tuples(
    st.sampled_from(["o1", "o2", "o3", "o10"]),
    st.integers(1, 3),
    st.sampled_from(["active", "cancelled", "deleted"]),
    st.integers(0, 50),
    st.sampled_from(DAYS),
)
customer_row = st.tuples(
    st.sampled_from(["c1", "c2", "c3"]), st.sampled_from(["active", "deleted"]), st.sampled_from(DAYS)
)


def warehouse(orders: list[tuple], customers: list[tuple]) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    migrate(con)
    seen = set()
    for order_id, line_no, status, amount, day in orders:
        if (order_id, line_no, day) in seen:
            continue
        seen.add((order_id, line_no, day))
        live = status != "deleted"
        con.execute(
            "INSERT INTO order_history VALUES (?, ?, ?, 'c1', 'p1', ?, ?, ?, ?, ?, ?, ?, 'i', ?)",
            [order_id, line_no, "s1" if live else None, "2026-01-01" if live else None,
             1 if live else None, amount if live else None, amount // 2 if live else None,
             status, amount, amount, day],
        )  # fmt: skip
    for customer_id, status, day in customers:
        if (customer_id, day) in seen:
            continue
        seen.add((customer_id, day))
        con.execute(
            "INSERT INTO customer_history VALUES (?, ?, ?, ?, 1, 1, 'i', ?)",
            [customer_id, "Ana" if status == "active" else None, "retail" if status == "active" else None,
             status, day],
        )  # fmt: skip
    return con


def whole(con: duckdb.DuckDBPyConnection, day: str) -> tuple[str, tuple[int, ...], int]:
    orders = con.sql(snapshot_scan.ORDERS_SQL, params={"day": day}).pl()
    customers = con.sql(snapshot_scan.CUSTOMERS_SQL, params={"day": day}).pl()
    digest = sha256_text(
        canonical_json(
            {
                "orders": content_sha256(orders, ["order_id", "line_no"]),
                "customers": content_sha256(customers, ["customer_id"]),
            }
        )
    )
    return digest, controls_of(orders).as_tuple(), orders.height + customers.height


@settings(max_examples=80, deadline=None)
@given(
    st.lists(order_row, max_size=25),
    st.lists(customer_row, max_size=6),
    st.integers(1, 4),
    st.sampled_from(DAYS),
)
def test_streamed_scan_equals_the_whole_frame(orders: list, customers: list, part: int, day: str) -> None:
    con = warehouse(orders, customers)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(snapshot_scan, "PART_ROWS", part)
        scanned = snapshot_scan.scan_snapshot(con, day)
    assert (scanned.digest, scanned.controls.as_tuple(), scanned.rows) == whole(con, day)
    assert scanned.schema.passed and scanned.unique_keys.passed and scanned.non_negative.passed
    assert scanned.unique_keys.metadata["rows"] == scanned.rows


def test_a_negative_amount_is_named_from_whichever_part_holds_it() -> None:
    con = warehouse([("o1", 1, "active", 5, DAYS[0]), ("o2", 1, "active", 7, DAYS[0])], [])
    con.execute("UPDATE order_history SET amount_minor = -1 WHERE order_id = 'o2'")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(snapshot_scan, "PART_ROWS", 1)
        scanned = snapshot_scan.scan_snapshot(con, DAYS[0])
    assert not scanned.non_negative.passed and "o2|1" in scanned.non_negative.summary
    assert not scanned.schema.passed and "amount_minor" in scanned.schema.summary


def test_aggregate_candidates_are_built_in_parts_of_bounded_lines(monkeypatch: pytest.MonkeyPatch) -> None:
    from replay_assets.storage.publish import procedure as publish

    monkeypatch.setattr(publish, "PART_LINES", 10)
    counts = pl.DataFrame(
        {"business_date": ["d1", "d1", "d2", "d3", "d4"], "line_count": [4, 3, 5, 30, 2]},
    )
    parts = publish._parts(["d1", "d2", "d3", "d4", "d5"], counts)
    assert parts == [["d1"], ["d2"], ["d3"], ["d4", "d5"]]
    assert [d for p in parts for d in p] == ["d1", "d2", "d3", "d4", "d5"]
