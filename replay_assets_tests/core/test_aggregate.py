"""Daily aggregates and snapshot controls: the set-based frame equals the oracle; hashes ignore order."""

from __future__ import annotations

from typing import Any

import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from replay_assets.core.aggregate import (
    AGGREGATE_COLUMNS,
    Controls,
    aggregate_frame,
    aggregate_images,
    content_sha256,
    controls_of,
)
from replay_assets.core.events import canonical_json, sha256_text

LINE_SCHEMA = {
    "order_id": pl.Utf8,
    "line_no": pl.Int64,
    "store_id": pl.Utf8,
    "customer_id": pl.Utf8,
    "product_id": pl.Utf8,
    "business_date": pl.Utf8,
    "quantity": pl.Int64,
    "amount_minor": pl.Int64,
    "cost_minor": pl.Int64,
    "status": pl.Utf8,
}
QUICK = settings(max_examples=60, deadline=None, database=None)


def frame(rows: list[dict[str, Any]]) -> pl.DataFrame:
    return pl.DataFrame(rows, schema=LINE_SCHEMA)


@st.composite
def order_lines(draw: st.DrawFn) -> list[dict[str, Any]]:
    keys = draw(
        st.lists(
            st.tuples(st.sampled_from(["o1", "o2", "o3", "o4", "Ö5"]), st.integers(1, 3)),
            unique=True,
            max_size=12,
        )
    )
    return [
        {
            "order_id": order_id,
            "line_no": line_no,
            "store_id": draw(st.sampled_from(["north", "south", "East", "é"])),
            "customer_id": "c1",
            "product_id": "p1",
            "business_date": draw(st.sampled_from(["2026-01-01", "2026-01-02", "2025-12-31"])),
            "quantity": draw(st.integers(0, 10**6)),
            "amount_minor": draw(st.integers(0, 10**12)),
            "cost_minor": draw(st.integers(0, 10**12)),
            "status": draw(st.sampled_from(["active", "active", "cancelled"])),
        }
        for order_id, line_no in keys
    ]


@QUICK
@given(order_lines())
def test_aggregate_frame_equals_the_oracle(rows: list[dict[str, Any]]) -> None:
    actual = aggregate_frame(frame(rows))
    assert actual.columns == list(AGGREGATE_COLUMNS)
    assert actual.to_dicts() == aggregate_images(rows)


@QUICK
@given(order_lines(), st.data())
def test_aggregate_does_not_depend_on_row_order(rows: list[dict[str, Any]], data: st.DataObject) -> None:
    shuffled = data.draw(st.permutations(rows))
    assert aggregate_images(shuffled) == aggregate_images(rows)
    assert aggregate_frame(frame(shuffled)).to_dicts() == aggregate_frame(frame(rows)).to_dicts()


def test_aggregate_small_example() -> None:
    rows = [
        line("o1", 1, "north", "2026-01-01", 2, 100, 40),
        line("o1", 2, "north", "2026-01-01", 1, 50, 10),
        line("o2", 1, "north", "2026-01-01", 3, 30, 50),
        line("o3", 1, "north", "2026-01-01", 5, 999, 1, status="cancelled"),
        line("o4", 1, "south", "2026-01-02", 1, 10, 0),
        line("o5", 1, "west", "2026-01-02", 1, 10, 0, status="cancelled"),
    ]
    expected = [
        {
            "store_id": "north",
            "business_date": "2026-01-01",
            "order_count": 2,
            "line_count": 3,
            "units": 6,
            "amount_minor": 180,
            "cost_minor": 100,
            "gross_profit_minor": 80,
        },
        {
            "store_id": "south",
            "business_date": "2026-01-02",
            "order_count": 1,
            "line_count": 1,
            "units": 1,
            "amount_minor": 10,
            "cost_minor": 0,
            "gross_profit_minor": 10,
        },
    ]
    assert aggregate_images(rows) == expected
    assert aggregate_frame(frame(rows)).to_dicts() == expected


def test_group_with_only_cancelled_lines_disappears() -> None:
    rows = [line("o1", 1, "north", "2026-01-01", 1, 10, 1, status="cancelled")]
    assert aggregate_images(rows) == []
    assert aggregate_frame(frame(rows)).height == 0
    assert aggregate_frame(frame([])).height == 0


def line(
    order_id: str,
    line_no: int,
    store: str,
    day: str,
    qty: int,
    amount: int,
    cost: int,
    status: str = "active",
) -> dict[str, Any]:
    return {
        "order_id": order_id,
        "line_no": line_no,
        "store_id": store,
        "customer_id": "c1",
        "product_id": "p1",
        "business_date": day,
        "quantity": qty,
        "amount_minor": amount,
        "cost_minor": cost,
        "status": status,
    }


def test_controls_of_small_table() -> None:
    rows = [
        line("o1", 1, "north", "2026-01-01", 2, 100, 40),
        line("o1", 2, "south", "2026-01-02", 1, 50, 10),
        line("o2", 1, "north", "2026-01-01", 3, 30, 50),
        line("o3", 1, "north", "2026-01-01", 7, 999, 1, status="cancelled"),
    ]
    controls = controls_of(frame(rows))
    assert controls == Controls(
        active_lines=3, distinct_orders=2, units=6, amount_minor=180, cost_minor=100, gross_profit_minor=80
    )
    assert controls.as_tuple() == (3, 2, 6, 180, 100, 80)


def test_controls_of_empty_and_all_cancelled() -> None:
    zero = Controls(0, 0, 0, 0, 0, 0)
    assert controls_of(frame([])) == zero
    assert controls_of(frame([line("o1", 1, "n", "2026-01-01", 1, 5, 1, status="cancelled")])) == zero


@QUICK
@given(order_lines())
def test_controls_agree_with_the_aggregates(rows: list[dict[str, Any]]) -> None:
    controls = controls_of(frame(rows))
    groups = aggregate_images(rows)
    assert controls.active_lines == sum(g["line_count"] for g in groups)
    assert controls.units == sum(g["units"] for g in groups)
    assert controls.amount_minor == sum(g["amount_minor"] for g in groups)
    assert controls.cost_minor == sum(g["cost_minor"] for g in groups)
    assert controls.gross_profit_minor == controls.amount_minor - controls.cost_minor
    assert controls.distinct_orders == len({r["order_id"] for r in rows if r["status"] == "active"})


@QUICK
@given(order_lines(), st.data())
def test_content_sha256_is_independent_of_row_order(rows: list[dict[str, Any]], data: st.DataObject) -> None:
    shuffled = data.draw(st.permutations(rows))
    key = ["order_id", "line_no"]
    assert content_sha256(frame(shuffled), key) == content_sha256(frame(rows), key)


def test_content_sha256_changes_with_content() -> None:
    rows = [line("o1", 1, "north", "2026-01-01", 2, 100, 40), line("o2", 1, "north", "2026-01-01", 1, 5, 0)]
    changed = [rows[0], {**rows[1], "amount_minor": 6}]
    key = ["order_id", "line_no"]
    base = content_sha256(frame(rows), key)
    assert content_sha256(frame(changed), key) != base
    assert content_sha256(frame(rows[:1]), key) != base
    assert content_sha256(frame([]), key) != base
    assert content_sha256(frame(list(reversed(rows))), key) == base


def test_content_sha256_of_aggregates_ignores_row_order() -> None:
    rows = [
        line("o1", 1, "north", "2026-01-01", 2, 100, 40),
        line("o2", 1, "south", "2026-01-01", 1, 5, 0),
        line("o3", 1, "east", "2026-01-02", 1, 7, 2),
    ]
    agg = aggregate_frame(frame(rows))
    key = ["store_id", "business_date"]
    assert content_sha256(agg.reverse(), key) == content_sha256(agg, key)
    assert content_sha256(agg.sample(fraction=1.0, shuffle=True, seed=3), key) == content_sha256(agg, key)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.one_of(st.none(), st.text(max_size=6)),
            st.one_of(st.none(), st.integers(-(2**62), 2**62)),
            st.sampled_from(["a", "b|c", 'q"', "x\\y", "é€", "\x01", "\x7f"]),
        ),
        max_size=20,
    )
)
def test_content_sha256_set_based_equals_canonical_json_rows(rows: list[tuple[Any, ...]]) -> None:
    frame = pl.DataFrame(rows, schema={"t": pl.String, "i": pl.Int64, "s": pl.String}, orient="row")
    ordered = frame.sort(["t", "i", "s"]) if frame.height else frame
    expected = sha256_text("\n".join(canonical_json(row) for row in ordered.iter_rows()))
    assert content_sha256(frame, ["t", "i", "s"]) == expected
