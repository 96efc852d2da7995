"""Each key's newest history row, kept as a table (``order_latest``, ``customer_latest``; schema
v8) so a load date's work reads the state it builds on in the size of the state, not of the
history the horizon keeps (SPEC 10 "cost by change": the fold reaches history through the keys
it touches).

**Invariant**, at every commit: the latest tables hold exactly each key's row with the greatest
load date in history (tombstones included), i.e. the state as of the newest applied date. It is
kept in the transaction that changes history: ``advance`` after a date's rows are written (a
date is only ever written when no later date is in history), ``retract`` after a date's rows
are removed (a restatement undoes it). Pruning removes superseded rows only, never a key's
newest. The history tables stay the record: as-of reads, the audit and re-verification read
them, and a read that is not "the state as of the newest date" falls back to the history window.
"""

from __future__ import annotations

import duckdb

from replay_assets.storage.db.warehouse import one

# history table -> (latest table, key); constants of this module only
LATEST = {
    "order_history": ("order_latest", ("order_id", "line_no")),
    "customer_history": ("customer_latest", ("customer_id",)),
}


def _newest(con: duckdb.DuckDBPyConnection, tables: tuple[str, ...]) -> str:
    parts = " UNION ALL ".join(f"SELECT max(load_date) AS d FROM {t}" for t in tables)
    row = one(con, f"SELECT coalesce(max(d), '') FROM ({parts})")
    return str(row[0]) if row else ""


def holds_before(con: duckdb.DuckDBPyConnection, day: str) -> bool:
    """Whether the latest tables are the state just before ``day``: history holds nothing after
    ``day`` and the latest tables nothing from ``day`` on (its rows, if written, not folded in)."""
    return _newest(con, tuple(LATEST)) <= day and _newest(con, tuple(t for t, _ in LATEST.values())) < day


def holds_as_of(con: duckdb.DuckDBPyConnection, day: str) -> bool:
    """Whether the latest tables are the state as of ``day`` (no history after it)."""
    return _newest(con, tuple(LATEST)) <= day


def advance(con: duckdb.DuckDBPyConnection, day: str) -> None:
    """Fold the history rows ``day`` wrote into the latest tables (``day`` is the newest date)."""
    for history, (latest, key) in LATEST.items():
        same = " AND ".join(f"l.{c} = n.{c}" for c in key)
        con.execute(
            f"""DELETE FROM {latest} l USING (SELECT {", ".join(key)} FROM {history} WHERE load_date = $day) n
            WHERE {same}""",
            {"day": day},
        )
        con.execute(f"INSERT INTO {latest} SELECT * FROM {history} WHERE load_date = $day", {"day": day})


def retract(con: duckdb.DuckDBPyConnection, day: str) -> None:
    """After ``day``'s history rows were removed: each key whose newest row was ``day``'s takes
    its newest remaining row (none: the key did not exist before)."""
    for history, (latest, key) in LATEST.items():
        keys = ", ".join(key)
        con.execute(
            f"CREATE OR REPLACE TEMP TABLE _retracted AS SELECT {keys} FROM {latest} WHERE load_date = $day",
            {"day": day},
        )
        con.execute(f"DELETE FROM {latest} WHERE load_date = $day", {"day": day})
        con.execute(
            f"""INSERT INTO {latest} SELECT h.* FROM {history} h SEMI JOIN _retracted USING ({keys})
            QUALIFY row_number() OVER (PARTITION BY {", ".join(f"h.{c}" for c in key)}
                                       ORDER BY h.load_date DESC) = 1"""
        )
    con.execute("DROP TABLE IF EXISTS _retracted")


def differences(con: duckdb.DuckDBPyConnection) -> int:
    """Rows by which the latest tables differ from each key's newest history row (the audit:
    0 while the invariant holds)."""
    total = 0
    for history, (latest, key) in LATEST.items():
        newest = f"""SELECT * FROM {history}
            QUALIFY row_number() OVER (PARTITION BY {", ".join(key)} ORDER BY load_date DESC) = 1"""
        found = one(
            con,
            f"""SELECT count(*) FROM ((SELECT * FROM {latest} EXCEPT ALL {newest})
                UNION ALL ({newest} EXCEPT ALL SELECT * FROM {latest}))""",
        )
        total += int(found[0]) if found else 0
    return total
