"""Each key's newest history row, kept as a table (``order_latest``, ``customer_latest``; schema
v8) so a load date's work reads the state it builds on in the size of the state, not of the
history the horizon keeps (cost by change: the fold reaches history through the keys
it touches).

**Invariant**, at every commit: the latest tables hold exactly each key's row with the greatest
load date in history (tombstones included), i.e. the state as of the newest applied date. It is
kept in the transaction that changes history: ``advance`` after a date's rows are written
(normally the newest date; a backfill may fold a date again under later ones), ``retract`` after
a date's rows are removed (a restatement undoes it). Pruning removes superseded rows only, never a key's
newest. The history tables stay the record: as-of reads, the audit and re-verification read
them, and a read that is not "the state as of the newest date" falls back to the history window.
"""

from __future__ import annotations

import duckdb

from replay_assets.storage.db.warehouse import one
from replay_assets.storage.rules import latest as latest_rules
from replay_assets.storage.rules.latest import COLUMNS, DROPPED, LATEST


def _newest(con: duckdb.DuckDBPyConnection, tables: tuple[str, ...]) -> str:
    parts = " UNION ALL ".join(f"SELECT max(load_date) AS d FROM {t}" for t in tables)
    row = one(con, f"SELECT coalesce(max(d), '') FROM ({parts})")
    return str(row[0]) if row else ""


def holds_before(con: duckdb.DuckDBPyConnection, day: str) -> bool:
    """Whether the latest tables are the state just before ``day``: history holds nothing after
    ``day`` and the latest tables nothing from ``day`` on (its rows, if written, not folded in)."""
    return _newest(con, tuple(LATEST)) <= day and _newest(con, tuple(v[0] for v in LATEST.values())) < day


def holds_as_of(con: duckdb.DuckDBPyConnection, day: str) -> bool:
    """Whether the latest tables are the state as of ``day`` (no history after it)."""
    return _newest(con, tuple(LATEST)) <= day


def _pointer(con: duckdb.DuckDBPyConnection, name: str) -> int:
    row = one(con, "SELECT value FROM pointers WHERE name = ?", [name])
    return int(row[0]) if row else 0


def _log(con: duckdb.DuckDBPyConnection, day: str, parts: dict[str, str]) -> None:
    """Record, as one new change generation, the published partitions the rows selected by
    ``parts`` (entity -> SQL of their partition values) sit in."""
    new = generation(con) + 1
    for entity, sql in parts.items():
        con.execute(
            f"""INSERT INTO latest_changes (generation, load_date, entity, part)
            SELECT DISTINCT $generation, $day, $entity, part FROM ({sql})""",
            {"generation": new, "day": day, "entity": entity},
        )


def advance(con: duckdb.DuckDBPyConnection, day: str) -> None:
    """Fold the history rows ``day`` wrote into the latest tables, logging the partitions the
    replaced rows leave and the new rows join. ``day`` is the newest date but in a backfill that
    re-applies one date with later ones applied: then each key it wrote takes its newest history
    row, which may be a later date's (the log then names a partition that did not change)."""
    newest = holds_as_of(con, day)
    parts = {}
    for history, (latest, key, entity, part) in LATEST.items():
        written = (
            f"(SELECT {', '.join(key)} FROM {history} WHERE load_date = $day) n USING ({', '.join(key)})"
        )
        parts[entity] = f"""SELECT {part} AS part FROM {latest} SEMI JOIN {written}
            UNION ALL SELECT {part} FROM {history} WHERE load_date = $day"""
    _log(con, day, parts)
    for history, (latest, key, _entity, _part) in LATEST.items():
        same = " AND ".join(f"l.{c} = n.{c}" for c in key)
        con.execute(
            f"""DELETE FROM {latest} l USING (SELECT {", ".join(key)} FROM {history} WHERE load_date = $day) n
            WHERE {same}""",
            {"day": day},
        )
        columns, keys = ", ".join(COLUMNS[history]), ", ".join(key)
        rows = (
            f"SELECT {columns} FROM {history} WHERE load_date = $day"
            if newest
            else f"""SELECT {columns} FROM {history} h SEMI JOIN (
                    SELECT {keys} FROM {history} WHERE load_date = $day) n USING ({keys})
                QUALIFY row_number() OVER (PARTITION BY {keys} ORDER BY h.load_date DESC) = 1"""
        )
        con.execute(f"INSERT INTO {latest} ({columns}) {rows}", {"day": day})


def log_removal(con: duckdb.DuckDBPyConnection, day: str) -> None:
    """Before ``day``'s history rows are removed to fold it again: the partitions they sit in are
    logged as a change of ``day``, so the published copy rewrites ``day``'s as-of rows even when
    the fold writes none back and the state's content hash stays (a row moved to an earlier date)."""
    _log(
        con,
        day,
        {
            entity: f"SELECT {part} AS part FROM {history} WHERE load_date = $day"
            for history, (_latest, _key, entity, part) in LATEST.items()
        },
    )


def retract(con: duckdb.DuckDBPyConnection, day: str) -> None:
    """After ``day``'s history rows were removed: each key whose newest row was ``day``'s takes
    its newest remaining row (none: the key did not exist before); the partitions the removed
    rows leave and the restored rows join are logged."""
    parts = {}
    for history, (latest, key, entity, part) in LATEST.items():
        keys = ", ".join(key)
        con.execute(
            f"CREATE OR REPLACE TEMP TABLE _retracted_{entity} AS "
            f"SELECT * FROM {latest} WHERE load_date = $day",
            {"day": day},
        )
        con.execute(f"DELETE FROM {latest} WHERE load_date = $day", {"day": day})
        columns = ", ".join(COLUMNS[history])
        con.execute(
            f"""INSERT INTO {latest} ({columns})
            SELECT {columns} FROM {history} h SEMI JOIN _retracted_{entity} USING ({keys})
            QUALIFY row_number() OVER (PARTITION BY {", ".join(f"h.{c}" for c in key)}
                                       ORDER BY h.load_date DESC) = 1"""
        )
        parts[entity] = f"""SELECT {part} AS part FROM _retracted_{entity}
            UNION ALL SELECT {part} FROM {latest} SEMI JOIN _retracted_{entity} USING ({keys})"""
    _log(con, day, parts)
    for entity in parts:
        con.execute(f"DROP TABLE IF EXISTS _retracted_{entity}")


def changed_parts(con: duckdb.DuckDBPyConnection, since: int) -> dict[str, set[str]] | None:
    """Per entity, the published partitions changed after generation ``since``; None when the
    log no longer holds every change after it (pruning dropped some): all may have changed."""
    if since < _pointer(con, DROPPED):
        return None
    found = con.execute(
        "SELECT DISTINCT entity, part FROM latest_changes WHERE generation > ?", [since]
    ).fetchall()
    out: dict[str, set[str]] = {entity: set() for _t, _k, entity, _p in LATEST.values()}
    for entity, part in found:
        out[str(entity)].add(str(part))
    return out


def generation(con: duckdb.DuckDBPyConnection) -> int:
    """The newest change generation logged (pruning deletes only generations up to ``DROPPED``,
    so this never goes back)."""
    row = one(con, "SELECT coalesce(max(generation), 0) FROM latest_changes")
    return max(int(row[0]) if row else 0, _pointer(con, DROPPED))


def drop_changes(con: duckdb.DuckDBPyConnection, day: str) -> None:
    """Pruning ``day``: its change-log rows go; a copy exported before the newest of them
    rewrites every partition (``changed_parts`` returns None)."""
    found = one(con, "SELECT max(generation) FROM latest_changes WHERE load_date <= ?", [day])
    if found is None or found[0] is None:
        return
    con.execute("DELETE FROM latest_changes WHERE load_date <= ?", [day])
    dropped = max(_pointer(con, DROPPED), int(found[0]))
    con.execute("INSERT OR REPLACE INTO pointers (name, value) VALUES (?, ?)", [DROPPED, str(dropped)])


def differences(con: duckdb.DuckDBPyConnection) -> int:
    """Rows by which the latest tables differ from each key's newest history row (the audit:
    0 while the invariant holds)."""
    total = 0
    for history in LATEST:
        found = one(con, latest_rules.differences(history))
        total += int(found[0]) if found else 0
    return total
