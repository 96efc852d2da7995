"""The fold in DuckDB equals the core's sequential oracle on arbitrary inputs, conflicts included."""

from __future__ import annotations

import duckdb
import polars as pl
from hypothesis import given, settings

from replay_assets.core.fold import Committed, FoldInput, fold_reference, frame_to_result
from replay_assets.storage.fold_sql import fold_into
from replay_assets_tests.core.test_fold_equivalence import as_frames, fold_inputs


def sql_fold(events: list[FoldInput], committed: dict, registry: dict) -> pl.DataFrame:
    con = duckdb.connect()
    try:
        for name, frame in zip(
            ("_events", "_committed", "_registry"), as_frames(events, committed, registry), strict=True
        ):
            con.register(name, frame)
        fold_into(con)
        return con.sql("SELECT pos, outcome, rule, winner FROM _fold ORDER BY pos").pl()
    finally:
        con.close()


@settings(max_examples=400, deadline=None)
@given(fold_inputs())
def test_sql_fold_equals_oracle(case: tuple[list[FoldInput], dict, dict]) -> None:
    events, committed, registry = case
    assert frame_to_result(sql_fold(events, committed, registry)) == fold_reference(
        events, committed, registry
    )


def test_sql_fold_fences_stale_and_picks_the_highest_version() -> None:
    events = [
        FoldInput(0, "erp", "e1", 1, "order_line", "k", 5, "c1", "i1"),
        FoldInput(1, "erp", "e2", 2, "order_line", "k", 3, "c2", "i2"),  # below committed 4: stale
        FoldInput(2, "erp", "e1", 1, "order_line", "k", 5, "c1", "i1"),  # same id, same content
        FoldInput(3, "erp", "e3", 3, "order_line", "k", 7, "c3", "i3"),
    ]
    result = frame_to_result(sql_fold(events, {("order_line", "k"): Committed(4, "i0")}, {}))
    assert [result.classified[p].outcome.value for p in range(4)] == [
        "accepted",
        "skipped_stale",
        "skipped_duplicate",
        "accepted",
    ]
    assert result.winners == frozenset({3})
