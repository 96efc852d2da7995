"""The published current state by partition (``published_state.py``): a refresh rewrites only the
business dates a load date changed (a move leaves one and joins another, a delete joins ``none``),
the copy's views equal the warehouse's certified state after every refresh, the files of the
refresh before stay and older ones go, and a copy the change log cannot bring forward (no record,
a log pruning shortened) is rewritten whole, equal all the same."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import duckdb
import pytest

from replay_assets.storage.apply import latest
from replay_assets.usecases.context import Pipeline
from replay_assets.usecases.recover import refresh_published
from replay_assets_tests.helpers import drive
from replay_assets_tests.storage.test_bad_input import D1, D2, D3, deliver, event, make_pipeline

B1, B2, B3 = "2026-01-05", "2026-01-06", "2026-01-07"  # business dates


def published(home: Path, as_of: list[str] | None = None) -> dict[str, list[tuple[Any, ...]]]:
    """The copy's current state, and its state as of each date of ``as_of``."""
    con = duckdb.connect(str(home / "published.duckdb"), read_only=True)
    try:
        found = {
            view: con.execute(f"SELECT * FROM {view} ORDER BY ALL").fetchall()
            for view in ("current_orders", "current_customers")
        }
        for day in as_of or []:
            found[f"orders as of {day}"] = con.execute(
                "SELECT * FROM orders_as_of(?) ORDER BY ALL", [day]
            ).fetchall()
        return found
    finally:
        con.close()


def certified(p: Pipeline) -> dict[str, list[tuple[Any, ...]]]:
    with p.warehouse.connect() as con:
        return {
            view: con.execute(f"SELECT * FROM {view} ORDER BY ALL").fetchall()
            for view in ("current_orders", "current_customers")
        }


def record(home: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((home / "published" / "exported.json").read_text())
    return loaded


def files(home: Path) -> set[str]:
    return {p.name for p in (home / "published" / "current" / "orders").glob("*.parquet")}


@pytest.fixture
def day_one(tmp_path: Path) -> Pipeline:
    p = make_pipeline(tmp_path)
    deliver(
        p,
        D1,
        "b1",
        [
            event(1, "o1", business_date=B1),
            event(2, "o2", business_date=B2),
            event(3, "o3", business_date=B3),
            event(4, "o4", business_date=B3),
        ],
    )
    drive(p)
    return p


def test_a_refresh_rewrites_only_the_partitions_the_date_changed(day_one: Pipeline) -> None:
    home = day_one.settings.home
    first = record(home)["current_files"]["orders"]
    assert set(first) == {B1, B2, B3}
    assert published(home) == certified(day_one)
    deliver(
        day_one,
        D2,
        "b2",
        [event(5, "o1", business_date=B2), event(6, "o4", op="delete")],  # a move B1 -> B2, a delete in B3
    )
    drive(day_one)
    second = record(home)["current_files"]["orders"]
    assert B1 not in second  # its only line moved away: no file
    assert second[B3] != first[B3] and second[B2] != first[B2] and "none" in second
    assert published(home) == certified(day_one)
    deliver(day_one, D3, "b3", [event(7, "o2", business_date=B2, amount_minor=7)])
    drive(day_one)
    third = record(home)["current_files"]["orders"]
    assert third[B2] != second[B2]
    assert {part: third[part] for part in (B3, "none")} == {part: second[part] for part in (B3, "none")}
    assert published(home) == certified(day_one)
    # the refresh before stays for readers holding its list; the one before that is gone
    listed = {n for parts in (second, third) for names in parts.values() for n in names}
    assert files(home) == listed | {"_schema.parquet"}
    assert not set(first[B1]) & files(home)


def test_a_copy_the_change_log_cannot_bring_forward_is_rewritten_whole(day_one: Pipeline) -> None:
    home = day_one.settings.home
    deliver(day_one, D2, "b2", [event(5, "o1", business_date=B2)])
    with day_one.warehouse.connect() as con:  # as if pruning had dropped changes the copy needs
        con.execute(
            "INSERT OR REPLACE INTO pointers VALUES (?, ?)", [latest.DROPPED, str(latest.generation(con) + 1)]
        )
    drive(day_one)
    assert set(record(home)["current_files"]["orders"]) == {B2, B3}
    assert published(home) == certified(day_one)
    (home / "published" / "exported.json").unlink()  # a lost record: every partition again
    refresh_published(day_one)
    assert published(home) == certified(day_one)
    assert files(home) == {
        *(n for names in record(home)["current_files"]["orders"].values() for n in names),
        *(n for names in record(home)["previous_files"].get("orders", {}).values() for n in names),
        "_schema.parquet",
    }


def test_a_reader_of_an_empty_home_sees_the_columns_and_no_rows(tmp_path: Path) -> None:
    p = make_pipeline(tmp_path)
    deliver(p, D1, "b1", [event(1, "o1", op="delete")])  # the state is one tombstone
    drive(p)
    assert published(tmp_path) == certified(p)
    con = duckdb.connect(str(tmp_path / "published.duckdb"), read_only=True)
    columns = [c[0] for c in con.execute("DESCRIBE current_orders").fetchall()]
    con.close()
    assert columns[:2] == ["order_id", "line_no"] and "filename" not in columns


def test_a_date_that_changes_no_partition_still_publishes_its_record(day_one: Pipeline) -> None:
    home = day_one.settings.home
    files_before = record(home)["current_files"]
    deliver(day_one, D2, "b2", [event(1, "o1", business_date=B1)])  # a replay: a duplicate only
    drive(day_one)
    assert record(home)["current_files"] == files_before  # nothing rewritten
    con = duckdb.connect(str(home / "published.duckdb"), read_only=True)
    keys = con.execute(
        "SELECT partition_key FROM publications WHERE asset = 'current_orders' ORDER BY 1"
    ).fetchall()
    con.close()
    assert keys == [(D1,), (D2,)]
    assert published(home) == certified(day_one)
