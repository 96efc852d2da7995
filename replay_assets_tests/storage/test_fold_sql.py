"""The production fold (DuckDB SQL, ``storage/apply/fold_sql.py``) equals the core's sequential oracle
``fold_reference`` on arbitrary inputs, conflicts included. There is no other fold."""

from __future__ import annotations

import duckdb
import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from replay_assets.core.errors import Violation
from replay_assets.core.fold import (
    Classified,
    Committed,
    FoldInput,
    FoldResult,
    Outcome,
    fold_reference,
)
from replay_assets.storage.apply.fold_sql import fold_into
from replay_assets.storage.rules.fold import FOLD_SQL, fold_statement

EVENT_SCHEMA = pl.Schema(
    {
        "pos": pl.Int64,
        "source": pl.String,
        "event_id": pl.String,
        "source_seq": pl.Int64,
        "entity": pl.String,
        "key": pl.String,
        "version": pl.Int64,
        "content_sha256": pl.String,
        "image_sha256": pl.String,
    }
)
COMMITTED_SCHEMA = pl.Schema(
    {
        "entity": pl.String,
        "key": pl.String,
        "version": pl.Int64,
        "image_sha256": pl.String,
    }
)
REGISTRY_SCHEMA = pl.Schema(
    {
        "source": pl.String,
        "event_id": pl.String,
        "source_seq": pl.Int64,
        "content_sha256": pl.String,
    }
)


small = st.sampled_from
raw_event = st.tuples(
    small(["s1", "s2"]),
    small(["e1", "e2", "e3", "e4"]),
    st.integers(1, 4),
    small(["order_line", "customer"]),
    small(["k1", "k2"]),
    st.integers(1, 4),
    small(["c1", "c2", "c3"]),
    small(["i1", "i2", "tombstone"]),
)


@st.composite
def fold_inputs(draw: st.DrawFn) -> tuple[list[FoldInput], dict, dict]:
    raws = draw(st.lists(raw_event, max_size=14))
    events = [FoldInput(pos, *raw) for pos, raw in enumerate(draw(st.permutations(raws)))]
    committed = {
        (entity, key): Committed(version, image)
        for entity, key, version, image in draw(
            st.lists(
                st.tuples(
                    small(["order_line", "customer"]),
                    small(["k1", "k2"]),
                    st.integers(1, 4),
                    small(["i1", "i2", "tombstone"]),
                ),
                max_size=4,
            )
        )
    }
    registry: dict = {}
    seqs: set = set()
    for source, event_id, seq, content in draw(
        st.lists(
            st.tuples(
                small(["s1", "s2"]), small(["e1", "e2", "e5"]), st.integers(1, 5), small(["c1", "c2", "c3"])
            ),
            max_size=4,
        )
    ):
        if (source, event_id) not in registry and (source, seq) not in seqs:
            registry[(source, event_id)] = (seq, content)
            seqs.add((source, seq))
    return events, committed, registry


def as_frames(events: list[FoldInput], committed: dict, registry: dict) -> tuple[pl.DataFrame, ...]:
    ev = pl.DataFrame([e.__dict__ for e in events], schema=EVENT_SCHEMA)
    cm = pl.DataFrame(
        [
            {"entity": e, "key": k, "version": c.version, "image_sha256": c.image_sha256}
            for (e, k), c in committed.items()
        ],
        schema=COMMITTED_SCHEMA,
    )
    rg = pl.DataFrame(
        [
            {"source": s, "event_id": i, "source_seq": q, "content_sha256": c}
            for (s, i), (q, c) in registry.items()
        ],
        schema=REGISTRY_SCHEMA,
    )
    return ev, cm, rg


def frame_to_result(frame: pl.DataFrame) -> FoldResult:
    """Read the SQL fold's ``_fold`` rows back as the oracle's value type."""
    classified = {
        row["pos"]: Classified(Outcome(row["outcome"]), Violation(row["rule"]) if row["rule"] else None)
        for row in frame.iter_rows(named=True)
    }
    winners = frozenset(frame.filter(pl.col("winner"))["pos"].to_list())
    return FoldResult(classified, winners, frozenset(frame.filter(pl.col("new_id"))["pos"].to_list()))


# Three buckets: most group keys share one, so the twin filters pass singletons through the exact
# aggregates, as a 64-bit collision would.
COARSE = fold_statement("hash({}) % 3")


def sql_fold(
    events: list[FoldInput], committed: dict, registry: dict, statement: str = FOLD_SQL
) -> pl.DataFrame:
    con = duckdb.connect()
    try:
        for name, frame in zip(
            ("_events", "_committed", "_registry"), as_frames(events, committed, registry), strict=True
        ):
            con.register(name, frame)
        fold_into(con, statement)
        return con.sql("SELECT pos, outcome, rule, winner, new_id FROM _fold ORDER BY pos").pl()
    finally:
        con.close()


@settings(max_examples=400, deadline=None)
@given(fold_inputs())
def test_sql_fold_equals_oracle(case: tuple[list[FoldInput], dict, dict]) -> None:
    events, committed, registry = case
    expected = fold_reference(events, committed, registry)
    assert frame_to_result(sql_fold(events, committed, registry)) == expected
    assert frame_to_result(sql_fold(events, committed, registry, COARSE)) == expected


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
    assert result.new_ids == frozenset({0, 1, 3})  # the third event carries e1 again
