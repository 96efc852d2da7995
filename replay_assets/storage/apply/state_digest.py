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
from replay_assets.storage.apply.snapshot_scan import scan_snapshot
from replay_assets.storage.db.sql import DuckDBSql
from replay_assets.storage.db.warehouse import one
from replay_assets.storage.rules.digest import (
    ENTITIES,
    LIMBS,
    Hashing,
    StateDigest,
    Sums,
    base_of,
    change_by,
    full_by,
)

# ---------------------------------------------------------------- DuckDB's hashing


def _hashes(columns: tuple[str, ...]) -> str:
    row = ", ".join(f"'{c}': {c}" for c in columns)
    limbs = ", ".join(f"(('0x' || substr(h, {1 + 16 * i}, 16))::UBIGINT) AS l{i}" for i in range(LIMBS))
    return f"SELECT {limbs} FROM (SELECT sha256(to_json({{{row}}})) AS h FROM rows)"


def _sums_sql(columns: tuple[str, ...]) -> str:
    sums = ", ".join(f"coalesce(sum(l{i}), 0)" for i in range(LIMBS))
    return f"SELECT count(*), {sums} FROM ({_hashes(columns)})"


def duckdb_hashing(con: duckdb.DuckDBPyConnection) -> Hashing:
    """Each row's sha256 of its JSON rendering (``to_json`` of a struct of its columns), summed
    limb by limb in HUGEINT, exactly."""

    def sums(rows_sql: str, entity: str, day: str) -> Sums:
        _table, columns, _key = ENTITIES[entity]
        found = one(con, f"WITH rows AS ({rows_sql}) {_sums_sql(columns)}", {"day": day})
        assert found is not None
        return tuple(int(v) for v in found)

    return sums


def full(con: duckdb.DuckDBPyConnection, day: str) -> StateDigest:
    return full_by(duckdb_hashing(con), day)


def change(
    con: duckdb.DuckDBPyConnection, day: str, first: bool = False, *, from_latest: bool = False
) -> StateDigest:
    return change_by(duckdb_hashing(con), day, first, from_latest=from_latest)


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


def recomputed_digest(con: duckdb.DuckDBPyConnection, day: str) -> str:
    """The whole state's content hash as of ``day``, by the definition it was certified with: the
    multiset sums (from v7 on; a date with stored sums) or the ordered stream hash of the dates
    certified before."""
    if StoredSums(DuckDBSql(con)).stored_sums(day) is not None:
        return full(con, day).content_sha256
    return scan_snapshot(con, day).digest
