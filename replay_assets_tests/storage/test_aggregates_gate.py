"""The aggregates gate validates a whole part's candidates against the schema once: each
business date's verdicts must be exactly those of validating that date's rows on their own."""

from __future__ import annotations

import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from replay_assets.core.gate import Check, CheckOutcome
from replay_assets.storage.publish.procedure import aggregate_checks, aggregates_matched
from replay_assets.storage.rules.tables import RECON_COLUMNS

QUICK = settings(max_examples=60, deadline=None, database=None)
COLUMNS = {
    "store_id": pl.String,
    "business_date": pl.String,
    "order_count": pl.Int64,
    "line_count": pl.Int64,
    "units": pl.Int64,
    "amount_minor": pl.Int64,
    "cost_minor": pl.Int64,
    "gross_profit_minor": pl.Int64,
}
DATES = ["2026-01-01", "2026-01-02", "2026-01-03"]


@st.composite
def candidates(draw: st.DrawFn) -> pl.DataFrame:
    """Aggregates rows over a few dates; some cells may break the schema (a bad id, a date
    that is not one, a negative or huge amount, a null where none is allowed)."""
    store = st.sampled_from(["S1", "S2", "bad id", "", None])
    day = st.sampled_from([*DATES, "2026-1-4"])
    amount = st.sampled_from([0, 5, 1200, -1, 10**13, None])
    rows = draw(
        st.lists(
            st.tuples(store, day, amount, amount, amount, amount, amount, st.integers(-50, 50)),
            min_size=1,
            max_size=12,
        )
    )
    return pl.DataFrame(rows, schema=COLUMNS, orient="row")


def _verdicts(rows: pl.DataFrame, matched: bool) -> list[CheckOutcome]:
    return aggregate_checks(
        rows,
        rows,
        reconciliation=pl.DataFrame(schema=dict.fromkeys(RECON_COLUMNS, pl.Int64)),
        as_of="2026-01-05",
        first="2026-01-01",
        certified={"2026-01-05"},
        matched=matched,
    )


@QUICK
@given(candidates())
def test_a_matching_whole_gives_each_date_its_own_verdicts(frame: pl.DataFrame) -> None:
    matched = aggregates_matched(frame)
    for day in frame["business_date"].unique().to_list():
        rows = frame.filter(pl.col("business_date") == day)
        alone = _verdicts(rows, matched=False)
        assert _verdicts(rows, matched=matched) == alone
        if matched:
            assert alone[0].passed


def test_a_broken_cell_fails_the_whole_and_only_its_own_date() -> None:
    good = [("S1", d, 1, 1, 1, 1, 1, 0) for d in DATES]
    frame = pl.DataFrame([*good, ("S2", DATES[1], 1, 1, -1, 1, 1, 0)], schema=COLUMNS, orient="row")
    assert not aggregates_matched(frame)
    assert aggregates_matched(pl.DataFrame(good, schema=COLUMNS, orient="row"))
    schema = {day: _verdicts(frame.filter(pl.col("business_date") == day), matched=False)[0] for day in DATES}
    assert [schema[d].passed for d in DATES] == [True, False, True]
    assert schema[DATES[1]].check is Check.SCHEMA
