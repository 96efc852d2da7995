"""The published current state by cohort (``published_state.py``): a refresh rewrites only the
cohorts a load date changed (the date's own, and each one a key it changed leaves), so a day of
new keys writes one file however many business dates they fall on; the cohorts of a month the
retention horizon passed merge into one file; the copy's views equal the warehouse's certified
state after every refresh, the files of the refresh before stay and older ones go, and a copy the
change log cannot bring forward (no record, a log pruning shortened) is rewritten whole, equal all
the same. A query reads one generation whole or fails: never a mix of two."""

from __future__ import annotations

import copy
import json
import os
import shutil
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb
import pytest

from replay_assets.storage.apply import latest
from replay_assets.storage.apply.reading import pruned_through
from replay_assets.storage.db.sql import DuckDBSql
from replay_assets.storage.publish import exports, published_state
from replay_assets.usecases.context import Pipeline
from replay_assets.usecases.recover import refresh_published
from replay_assets_tests.helpers import drive, settings_for
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


def test_a_refresh_rewrites_only_the_cohorts_the_date_changed(day_one: Pipeline) -> None:
    home = day_one.settings.home
    first = record(home)["current_files"]["orders"]
    assert set(first) == {D1}
    assert published(home) == certified(day_one)
    deliver(
        day_one,
        D2,
        "b2",
        [event(5, "o1", business_date=B2), event(6, "o4", op="delete")],  # a move B1 -> B2, a delete
    )
    drive(day_one)
    second = record(home)["current_files"]["orders"]
    assert set(second) == {D1, D2} and second[D1] != first[D1]  # o1 and o4 left the first cohort
    assert published(home) == certified(day_one)
    # new keys on business dates other cohorts hold: one new file, every other stays
    deliver(day_one, D3, "b3", [event(7, "o5", business_date=B1), event(8, "o6", business_date=B2)])
    drive(day_one)
    third = record(home)["current_files"]["orders"]
    assert set(third) == {D1, D2, D3}
    assert {part: third[part] for part in (D1, D2)} == {part: second[part] for part in (D1, D2)}
    assert published(home) == certified(day_one)
    # the refresh before stays for readers holding its list; the one before that is gone
    listed = {n for parts in (second, third) for names in parts.values() for n in names}
    assert files(home) == listed | {"_schema.parquet"}
    assert not set(first[D1]) & files(home)


def test_the_cohorts_of_a_month_the_horizon_passed_merge_into_one_file(tmp_path: Path) -> None:
    p = Pipeline(settings_for(tmp_path, "2026-02-04T12:00:00Z", retention_load_dates=1))
    days = ["2026-01-30", "2026-01-31", "2026-02-01", "2026-02-02"]
    for n, day in enumerate(days):
        deliver(p, day, f"b{n}", [event(n + 1, f"o{n}", business_date="2026-01-29")])
        drive(p)
        assert published(tmp_path) == certified(p)
    with p.warehouse.connect() as con:
        assert pruned_through(DuckDBSql(con)) == "2026-02-01"  # January is wholly behind the horizon
    before = record(tmp_path)["current_files"]["orders"]
    assert set(before) == {"2026-01", "2026-02-01", "2026-02-02"}
    deliver(p, "2026-02-03", "b9", [event(9, "o0", business_date="2026-01-29", amount_minor=3)])
    drive(p)  # a January key changed: the month's file is rewritten, the February cohorts stay
    parts = record(tmp_path)["current_files"]["orders"]
    assert set(parts) == {"2026-01", "2026-02-01", "2026-02-02", "2026-02-03"}
    assert parts["2026-01"] != before["2026-01"]
    assert {d: parts[d] for d in ("2026-02-01", "2026-02-02")} == {
        d: before[d] for d in ("2026-02-01", "2026-02-02")
    }
    assert published(tmp_path) == certified(p)


def test_a_copy_the_change_log_cannot_bring_forward_is_rewritten_whole(day_one: Pipeline) -> None:
    home = day_one.settings.home
    deliver(day_one, D2, "b2", [event(5, "o1", business_date=B2)])
    with day_one.warehouse.connect() as con:  # as if pruning had dropped changes the copy needs
        con.execute(
            "INSERT OR REPLACE INTO pointers VALUES (?, ?)",
            [latest.DROPPED, str(latest.generation(DuckDBSql(con)) + 1)],
        )
    drive(day_one)
    assert set(record(home)["current_files"]["orders"]) == {D1, D2}
    assert published(home) == certified(day_one)
    (home / "published" / "exported.json").unlink()  # a lost record: every partition again
    refresh_published(day_one)
    assert published(home) == certified(day_one)
    assert files(home) == {
        *(n for names in record(home)["current_files"]["orders"].values() for n in names),
        *(n for names in record(home)["previous_files"].get("orders", {}).values() for n in names),
        "_schema.parquet",
    }


def test_a_copy_whose_files_were_written_by_business_date_is_rewritten_whole(day_one: Pipeline) -> None:
    home = day_one.settings.home
    path = home / "published" / "exported.json"
    done = record(home)
    del done["layout"]  # as an earlier release recorded it: a file per business date
    done["current_files"]["orders"] = {B1: done["current_files"]["orders"][D1]}
    path.write_text(json.dumps(done))
    deliver(day_one, D2, "b2", [event(5, "o1", business_date=B2)])
    drive(day_one)
    assert set(record(home)["current_files"]["orders"]) == {D1, D2}
    assert published(home) == certified(day_one)


def test_a_copy_whose_files_were_removed_is_rewritten_whole(day_one: Pipeline) -> None:
    home = day_one.settings.home
    shutil.rmtree(home / "published" / "current")  # the record still lists what is gone
    refresh_published(day_one)
    assert published(home) == certified(day_one)


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


def _generation(home: Path, name: str) -> dict[str, set[str]]:
    folder = home / "published" / "current" / name
    return {entity: {p.name for p in (folder / entity).iterdir()} for entity in published_state.ENTITIES}


def test_live_is_a_generation_of_hard_links_named_apart_from_the_one_before(day_one: Pipeline) -> None:
    home = day_one.settings.home
    first = record(home)
    deliver(day_one, D2, "b2", [event(5, "o1", business_date=B2)])
    drive(day_one)
    second = record(home)
    assert published_state.live_folder(home / "published") == second["live"] != first["live"]
    assert second["previous_live"] == first["live"]
    before, now = _generation(home, first["live"]), _generation(home, second["live"])
    for entity in published_state.ENTITIES:
        assert not before[entity] & now[entity]  # a name listed in one opens nothing in the other
        tag = second["live"].removeprefix(published_state.GENERATION_PREFIX)
        pool = home / "published" / "current" / entity
        names = {n for parts in second["current_files"].get(entity, {}).values() for n in parts}
        assert now[entity] == {f"{tag}.{n}" for n in (*names, published_state.SCHEMA_FILE)}
        for name in names:  # the same files, not copies
            assert os.path.samefile(
                pool / name, home / "published" / "current" / second["live"] / entity / f"{tag}.{name}"
            )
    deliver(day_one, D3, "b3", [event(6, "o2", business_date=B2, amount_minor=7)])
    drive(day_one)
    third = record(home)
    kept = {p.name for p in (home / "published" / "current").glob(f"{published_state.GENERATION_PREFIX}*")}
    assert kept == {second["live"], third["live"]}  # the one before stays; older ones go
    assert published(home) == certified(day_one)


def _second_date_and_a_swap_back(p: Pipeline) -> tuple[dict[str, Any], list[str | None]]:
    """The record after the first date, then a second date applied (a move and a delete)."""
    first = copy.deepcopy(record(p.settings.home))
    deliver(p, D2, "b2", [event(5, "o1", business_date=B2), event(6, "o4", op="delete")])
    drive(p)
    return first, []


def _swap_once(home: Path, first: dict[str, Any], swaps: list[str | None]) -> Callable[[int], int]:
    """A SQL function that, the first time a query executes it (after the query listed its
    files), swaps ``live`` back to the first date's generation, as a refresh swaps it."""

    def swap(x: int) -> int:
        if not swaps:
            published_state.publish_generation(home / "published", copy.deepcopy(first))
            swaps.append(published_state.live_folder(home / "published"))
        return x

    return swap


def test_a_query_whose_listing_and_reads_a_swap_falls_between_fails_instead_of_mixing(
    day_one: Pipeline,
) -> None:
    home = day_one.settings.home
    first, swaps = _second_date_and_a_swap_back(day_one)
    listed = published_state.live_folder(home / "published")
    reader = duckdb.connect(str(home / "published.duckdb"), read_only=True)
    reader.create_function("swap", _swap_once(home, first, swaps), ["BIGINT"], "BIGINT", side_effects=True)
    with pytest.raises(duckdb.IOException, match=f"{listed}|No such file"):
        reader.execute("SELECT * FROM (SELECT swap(1) AS s) s, current_orders").fetchall()
    assert swaps == [first["live"]] != [listed]
    # run again, the query reads the generation now live, whole: the state as of the first date
    day_one_rows = reader.execute("SELECT * FROM current_orders ORDER BY ALL").fetchall()
    reader.close()
    assert {row[0] for row in day_one_rows} == {"o1", "o2", "o3", "o4"}
    assert all(str(row[-1]) == D1 for row in day_one_rows)


def test_an_export_a_swap_falls_inside_is_run_again_and_reads_the_generation_now_live(
    day_one: Pipeline,
) -> None:
    home = day_one.settings.home
    first, swaps = _second_date_and_a_swap_back(day_one)
    con = duckdb.connect()  # the copy's view, read behind the swap
    con.create_function("swap", _swap_once(home, first, swaps), ["BIGINT"], "BIGINT", side_effects=True)
    view = published_state.view_sql("orders", f"'{home}'")
    con.execute(
        f"CREATE VIEW current_orders AS SELECT v.* FROM (SELECT swap(1) AS s) s, ({view}) v WHERE s.s = 1"
    )
    frame = exports.table(con, "current_orders", None)
    con.close()
    assert swaps == [first["live"]]
    assert sorted(frame.rows()) == sorted(published(home)["current_orders"])
    assert {row[-1].isoformat() for row in frame.rows()} == {D1}  # the whole first state, run again


def test_readers_see_whole_generations_while_they_are_swapped(tmp_path: Path) -> None:
    """Many swaps under a reader querying without pause: every answer is one generation whole
    (or an error, run again); a listing that spans a swap never drops another one's files."""
    root = tmp_path / "published"
    pool = root / published_state.CURRENT / "orders"
    pool.mkdir(parents=True)
    writer = duckdb.connect()
    for entity in published_state.ENTITIES:
        (root / published_state.CURRENT / entity).mkdir(parents=True, exist_ok=True)
        writer.sql("SELECT 0 AS part, 0 AS generation LIMIT 0").write_parquet(
            str(root / published_state.CURRENT / entity / published_state.SCHEMA_FILE)
        )
    parts, files, states = 8, {}, set()
    done: dict[str, Any] = {}

    def generation(n: int) -> None:
        for part in range(parts):
            if n == 0 or (part + n) % 2 == 0:  # every generation changes half the partitions
                name = f"{part}.g{n}.parquet"
                writer.sql(f"SELECT {part} AS part, {n} AS generation FROM range(3)").write_parquet(
                    str(pool / name)
                )
                files[str(part)] = [name]
        states.add(
            tuple(sorted((int(p), int(names[0].split(".g")[1].split(".")[0])) for p, names in files.items()))
        )
        done["current_files"] = {"orders": copy.deepcopy(files)}
        published_state.publish_generation(root, done)
        published_state.drop_unlisted(root, {**done, "previous_files": done.get("current_files", {})})

    generation(0)
    view = published_state.view_sql("orders", f"'{tmp_path}'")
    query = f"SELECT part, min(generation), count(*) FROM ({view}) GROUP BY 1"
    answers: list[tuple[tuple[int, int, int], ...]] = []
    failures: list[str] = []
    stop = threading.Event()

    def read() -> None:
        reader = duckdb.connect()
        while not stop.is_set():
            try:
                answers.append(tuple(sorted(reader.execute(query).fetchall())))
            except duckdb.IOException as error:
                failures.append(str(error))
        reader.close()

    thread = threading.Thread(target=read)
    thread.start()
    for n in range(1, 250):
        generation(n)
    stop.set()
    thread.join()
    assert len(answers) > 100  # the reader overlapped the swaps (about 750 on a quiet machine)
    mixed = [a for a in answers if tuple((p, g) for p, g, _ in a) not in states or {c for *_, c in a} != {3}]
    assert not mixed, mixed[:3]
    assert all("No such file" in f or "No files found" in f for f in failures), failures[:3]
