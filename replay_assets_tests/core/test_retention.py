"""The replay horizon's rule (core/retention.py), property-tested: what is due for pruning."""

from hypothesis import given
from hypothesis import strategies as st

from replay_assets.core.retention import behind_horizon, prunable, refusal

DATES = st.sets(st.dates().map(lambda d: d.isoformat()), max_size=12)


@given(DATES, st.integers(1, 6), st.data())
def test_due_dates_are_the_oldest_applied_ones_behind_the_horizon_up_to_the_pointer(
    applied: set[str], keep: int, data: st.DataObject
) -> None:
    ordered = sorted(applied)
    done = data.draw(st.sampled_from(["", *ordered]), label="pruned through")
    pointer = data.draw(st.sampled_from(["", *ordered]), label="pointer")
    due = prunable(applied, keep, pruned_through=done, pointer=pointer)
    assert due == sorted(due)
    newest = set(ordered[-keep:])
    assert not newest & set(due)  # the horizon keeps the newest `keep` applied dates
    assert all(done < d <= pointer for d in due)
    # nothing behind the horizon is left out: after pruning these, only newer dates remain
    left = [d for d in ordered if d not in newest and done < d <= pointer and d not in due]
    assert left == []
    for d in due:
        assert not behind_horizon(d, done) and refusal(d, done, "x") is None
    assert all(behind_horizon(d, due[-1]) for d in due)


def test_a_refusal_names_the_date_and_the_horizon() -> None:
    reason = refusal("2026-01-02", "2026-01-03", "a backfill")
    assert reason is not None and "2026-01-02" in reason and "2026-01-03" in reason
    assert refusal("2026-01-04", "2026-01-03", "a backfill") is None
    assert refusal("2026-01-01", "", "a backfill") is None
