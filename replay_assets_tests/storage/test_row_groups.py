"""The landing's inserts in whole row groups (``row_groups.py``): whatever the files and their
sizes, the inserts read every row once, in order, and only the last insert is not a multiple of
the row group."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from replay_assets.storage.landing.row_groups import ROW_GROUP_ROWS, Queue, Take

# calls of one file: each adds files of some rows (none, less than, about or over a row group)
SIZES = st.sampled_from([0, 1, 7, ROW_GROUP_ROWS - 1, ROW_GROUP_ROWS, ROW_GROUP_ROWS + 1, 32_000, 64_000])
CALLS = st.lists(st.lists(SIZES, max_size=5), min_size=1, max_size=12)


@given(CALLS)
def test_every_row_is_inserted_once_in_order_and_only_the_last_partially(calls: list[list[int]]) -> None:
    """Rows are numbered in the order of their files: each insert must read the rows right after
    the ones before it, from the files holding them, and the last insert must read the last."""
    queue, order, total, done = Queue(), [], 0, 0
    where: dict[str, tuple[int, int]] = {}  # file -> (its first row's number, its rows)
    for n, call in enumerate(calls):
        added = [(f"{n}-{i}", rows) for i, rows in enumerate(call)]
        for name, rows in added:
            where[name], total = (total, rows), total + rows
            order += [name] if rows else []  # a file of no rows is never read
        last = n == len(calls) - 1
        take = queue.take(added, last=last)
        if take is None:
            continue
        assert take.rows > 0 and (last or take.rows % ROW_GROUP_ROWS == 0)
        first = order.index(take.files[0])
        assert take.files == order[first : first + len(take.files)], "its files, in their order"
        low, _rows = where[take.files[0]]
        assert low + take.offset == done and take.offset < _rows, "the rows right after the last insert's"
        high, rows = where[take.files[-1]]
        done += take.rows
        assert high < done <= high + rows, "its last file holds its last row"
    assert done == total
    assert queue.files == [] and queue.offset == 0


def test_rows_short_of_a_row_group_wait_for_the_next_call() -> None:
    queue = Queue()
    assert queue.take([("a", ROW_GROUP_ROWS - 1)], last=False) is None
    assert queue.take([("b", 3)], last=False) == Take(["a", "b"], ROW_GROUP_ROWS, 0)
    assert queue.take([("c", 5)], last=True) == Take(["b", "c"], 7, 1)
