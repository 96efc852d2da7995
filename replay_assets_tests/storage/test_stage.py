"""The fold's staging (``storage/apply/stage.py``): the events numbered in application order, folded
and joined back to their staged rows. Both numberings (arithmetic, and the window beyond its bit
budget) stage the same outcomes for the same rows."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest

from replay_assets.storage.apply.stage import drop_fold, sides_as_written, stage_fold
from replay_assets_tests.helpers import drive
from replay_assets_tests.storage.test_bad_input import D1, deliver, event, make_pipeline

PAST = 1 << 32  # line numbers this far leave the arithmetic numbering's 32 bits
# the outcomes ``_folded`` adds to a staged row, and staged columns that say which row it is
OUTCOME = "batch_id, source_file, event_id, outcome, rule, winner, version, amount_minor"


def test_both_numberings_stage_the_same_outcomes_for_the_same_rows(tmp_path: Path) -> None:
    p = make_pipeline(tmp_path)
    deliver(p, D1, "b1", [event(1, "o1", amount_minor=100), event(2, "o2"), event(3, "o1", amount_minor=70)])
    deliver(p, D1, "b2", [event(3, "o1", amount_minor=70), event(4, "o2", version=1), event(5, "o1")])
    drive(p)
    with p.warehouse.connect() as con:
        batches = ["b1", "b2"]
        stage_fold(con, batches, D1)
        arithmetic = con.execute(f"SELECT {OUTCOME}, line_number FROM _folded ORDER BY pos").fetchall()
        # the join's planning setting (``sides_as_written``) is given back
        assert con.execute("SELECT current_setting('disabled_optimizers')").fetchall() == [("",)]
        drop_fold(con)
        # line numbers past 32 bits leave the arithmetic numbering's budget: the window numbers them
        con.execute("UPDATE staged_rows SET line_number = line_number + ? WHERE load_date = ?", [PAST, D1])
        stage_fold(con, batches, D1)
        window = con.execute(
            f"SELECT {OUTCOME}, line_number - ? FROM _folded ORDER BY pos", [PAST]
        ).fetchall()
        positions = [r[0] for r in con.execute("SELECT pos FROM _folded ORDER BY pos").fetchall()]
    assert positions == list(range(1, 7))  # the window's dense numbering, not the arithmetic one
    assert window == arithmetic
    assert [(r[0], r[3], r[5]) for r in arithmetic] == [
        ("b1", "accepted", False),
        ("b1", "accepted", True),
        ("b1", "accepted", False),
        ("b2", "skipped_duplicate", False),
        ("b2", "accepted", False),  # below o2's version 2 in the same load date
        ("b2", "accepted", True),
    ]


def _built_side(con: duckdb.DuckDBPyConnection, sql: str) -> str:
    """The table the hash join of ``sql`` builds its hash table on (its plan's right child)."""
    plan = json.loads(con.execute("EXPLAIN (FORMAT JSON) " + sql).fetchall()[0][1])

    def joins(node: dict[str, object]) -> list[dict[str, object]]:
        children = node.get("children", [])
        assert isinstance(children, list)
        found = [node] if node["name"] == "HASH_JOIN" else []
        return found + [j for c in children for j in joins(c)]

    def tables(node: dict[str, object]) -> set[str]:
        info, children = node.get("extra_info", {}), node.get("children", [])
        assert isinstance(info, dict) and isinstance(children, list)
        own = {str(info["Table"])} if "Table" in info else set()
        return own | {t for c in children for t in tables(c)}

    [join] = [j for p in plan for j in joins(p)]
    children = join["children"]
    assert isinstance(children, list)
    [table] = tables(children[1])
    return table.rsplit(".", 1)[1]


@pytest.mark.parametrize("before", ["", "join_filter_pushdown"])
def test_sides_as_written_builds_the_right_side_and_restores_the_setting(before: str) -> None:
    con = duckdb.connect()
    con.execute(
        "CREATE TABLE wide AS SELECT range AS pos, range % 10 AS b, repeat('x', 40) AS w FROM range(100000)"
    )
    con.execute("CREATE TABLE narrow AS SELECT range AS pos, true AS winner FROM range(100000)")
    if before:
        con.execute(f"SET disabled_optimizers = '{before}'")
    # the filter makes DuckDB estimate the wide side smaller, so it would build on it
    sql = "SELECT * FROM (SELECT * FROM wide WHERE b < 5) s JOIN narrow USING (pos)"
    assert _built_side(con, sql) == "wide"
    with sides_as_written(con):
        assert _built_side(con, sql) == "narrow"
    assert con.execute("SELECT current_setting('disabled_optimizers')").fetchall() == [(before,)]
    assert _built_side(con, sql) == "wide"
