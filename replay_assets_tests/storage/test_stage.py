"""The fold's staging (``storage/apply/stage.py``): the events numbered in application order, folded
and joined back to their staged rows. Both numberings (arithmetic, and the window beyond its bit
budget) stage the same outcomes for the same rows."""

from __future__ import annotations

from pathlib import Path

from replay_assets.storage.apply.stage import drop_fold, stage_fold
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
        drop_fold(con)
        # line numbers past 32 bits leave the arithmetic numbering's budget: the window numbers them
        con.execute("UPDATE staged_events SET line_number = line_number + ? WHERE load_date = ?", [PAST, D1])
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
