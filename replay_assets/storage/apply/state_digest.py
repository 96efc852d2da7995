"""The state's content hash and controls kept from what each load date changed (cost by
change), in SQL over the rows the date wrote and the rows they replaced, never all of history.

**The content hash is a multiset hash.** Each state row (orders and customers, tombstones
included, with its version) hashes to sha256 of its JSON rendering; the hash's four 64-bit limbs
are summed over the state, exactly (HUGEINT), with the row count. The state as of D is the state
as of the applied date before it, minus the rows D replaced, plus the rows D wrote, so its sums
are the previous sums plus that difference: the same numbers a pass over the whole state gives
(``full``, the audit's path, proven equal by ``test_state_digest.py``). ``content_sha256`` is
sha256 of the canonical JSON of those sums. Finding two states with equal sums takes a chosen
collision of 256-bit sums, not something a CDC stream produces; the audit recomputes the whole
state anyway.

**Controls** (active lines, distinct orders, units, amount, cost, gross profit) are the previous
date's plus two differences over the orders the date touched, computed two ways the gate
compares: line by line (the rows written minus the rows replaced; distinct orders from the
touched orders' active lines before and after) and order by order (every line of the touched
orders as of before and as of after, changed or not).
"""

from __future__ import annotations

import duckdb

from replay_assets.core.aggregate import Controls
from replay_assets.storage.apply.certified import recomputed_controls
from replay_assets.storage.apply.reading import StoredSums
from replay_assets.storage.db.sql import DuckDBSql
from replay_assets.storage.db.warehouse import one
from replay_assets.storage.rules import by_change
from replay_assets.storage.rules.digest import (
    ENTITIES,
    LIMBS,
    StateDigest,
    Sums,
    base_of,
    combine_by_change,
)


def _hashes(columns: tuple[str, ...]) -> str:
    row = ", ".join(f"'{c}': {c}" for c in columns)
    limbs = ", ".join(f"(('0x' || substr(h, {1 + 16 * i}, 16))::UBIGINT) AS l{i}" for i in range(LIMBS))
    return f"SELECT {limbs} FROM (SELECT sha256(to_json({{{row}}})) AS h FROM rows)"


def _sums_sql(columns: tuple[str, ...]) -> str:
    sums = ", ".join(f"coalesce(sum(l{i}), 0)" for i in range(LIMBS))
    return f"SELECT count(*), {sums} FROM ({_hashes(columns)})"


def _sums(con: duckdb.DuckDBPyConnection, rows_sql: str, columns: tuple[str, ...], day: str) -> Sums:
    found = one(con, f"WITH rows AS ({rows_sql}) {_sums_sql(columns)}", {"day": day})
    assert found is not None
    return tuple(int(v) for v in found)


def full(con: duckdb.DuckDBPyConnection, day: str) -> StateDigest:
    """The sums over the whole state as of ``day`` (the audit, and a date certified before v7)."""
    return StateDigest(
        {
            e: _sums(con, by_change.as_of(table, key, "load_date <= $day"), columns, day)
            for e, (table, columns, key) in ENTITIES.items()
        }
    )


def change(
    con: duckdb.DuckDBPyConnection, day: str, first: bool = False, *, from_latest: bool = False
) -> StateDigest:
    """What ``day`` changed: the sums of the rows it wrote minus those of the rows they replaced
    (none when ``first``: no history before it)."""
    written = StateDigest({e: _sums(con, by_change.written(t), c, day) for e, (t, c, _k) in ENTITIES.items()})
    if first:
        return written
    replaced = StateDigest(
        {e: _sums(con, by_change.replaced(t, k, from_latest), c, day) for e, (t, c, k) in ENTITIES.items()}
    )
    return written.plus(replaced, sign=-1)


# ---------------------------------------------------------------- controls by change


def _controls_of(con: duckdb.DuckDBPyConnection, rows_sql: str, day: str) -> tuple[int, ...]:
    """Active lines, distinct orders with an active line, units, amount, cost, profit."""
    found = one(con, by_change.controls(rows_sql), {"day": day})
    assert found is not None
    return tuple(int(v) for v in found)


def controls_by_change(
    con: duckdb.DuckDBPyConnection,
    day: str,
    base: Controls,
    first: bool = False,
    *,
    from_latest: bool = False,
) -> tuple[Controls, Controls]:
    """The controls as of ``day`` from ``base`` (the previous applied date's), two ways: line by
    line, and order by order (see the module docstring). Equal unless the bookkeeping is wrong.
    ``first``: no history before ``day``, so nothing was replaced and no order had lines before.
    ``from_latest``: the latest tables hold the state before ``day`` (read there, not history)."""
    nothing: tuple[int, ...] = (0,) * 6
    written = _controls_of(con, by_change.written("order_history"), day)
    after: tuple[int, ...]
    before: tuple[int, ...]
    if first:
        after, before = written, nothing
    else:
        after = _controls_of(con, by_change.lines_of_touched(after=True, from_latest=from_latest), day)
        before = _controls_of(con, by_change.lines_of_touched(after=False, from_latest=from_latest), day)
    replaced = (
        nothing
        if first
        else _controls_of(con, by_change.replaced("order_history", ("order_id", "line_no"), from_latest), day)
    )
    return combine_by_change(base, written=written, replaced=replaced, after=after, before=before)


class _Reads(StoredSums):
    def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
        super().__init__(DuckDBSql(con))
        self.con = con

    def full_sums(self, day: str) -> StateDigest:
        return full(self.con, day)

    def recomputed_controls(self, day: str) -> Controls:
        return recomputed_controls(self.con, day)


def base(con: duckdb.DuckDBPyConnection, before: str | None) -> tuple[StateDigest, Controls]:
    """``base_of`` over the warehouse."""
    return base_of(before, _Reads(con))
