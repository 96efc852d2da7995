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

from replay_assets.storage.rules import latest as latest_rules
from replay_assets.storage.rules.latest import COLUMNS, DROPPED, LATEST
from replay_assets.storage.rules.sql import Sql


def _newest(sql: Sql, tables: tuple[str, ...]) -> str:
    parts = " UNION ALL ".join(f"SELECT max(load_date) AS d FROM {t}" for t in tables)
    found = sql.rows(f"SELECT coalesce(max(d), '') AS d FROM ({parts}) n")
    return str(found[0]["d"]) if found else ""


def holds_before(sql: Sql, day: str) -> bool:
    """Whether the latest tables are the state just before ``day``: history holds nothing after
    ``day`` and the latest tables nothing from ``day`` on (its rows, if written, not folded in)."""
    return _newest(sql, tuple(LATEST)) <= day and _newest(sql, tuple(v[0] for v in LATEST.values())) < day


def holds_as_of(sql: Sql, day: str) -> bool:
    """Whether the latest tables are the state as of ``day`` (no history after it)."""
    return _newest(sql, tuple(LATEST)) <= day


def _pointer(sql: Sql, name: str) -> int:
    found = sql.rows("SELECT value FROM pointers WHERE name = $name", name=name)
    return int(found[0]["value"]) if found else 0


def _log(sql: Sql, day: str, parts: dict[str, str]) -> None:
    """Record, as one new change generation, the published partitions the rows selected by
    ``parts`` (entity -> SQL of their partition values) sit in."""
    new = generation(sql) + 1
    for entity, rows in parts.items():
        sql.insert_from(
            "latest_changes",
            f"""SELECT DISTINCT CAST($generation AS BIGINT) AS generation, $day AS load_date,
                $entity AS entity, part FROM ({rows}) p""",
            generation=new,
            day=day,
            entity=entity,
        )


def advance(sql: Sql, day: str) -> None:
    """Fold the history rows ``day`` wrote into the latest tables, logging the partitions the
    replaced rows leave and the new rows join. ``day`` is the newest date but in a backfill that
    re-applies one date with later ones applied: then each key it wrote takes its newest history
    row, which may be a later date's (the log then names a partition that did not change)."""
    newest = holds_as_of(sql, day)
    parts = {}
    for history, (latest, key, entity, part) in LATEST.items():
        written = (
            f"(SELECT {', '.join(key)} FROM {history} WHERE load_date = $day) n USING ({', '.join(key)})"
        )
        parts[entity] = f"""SELECT {part} AS part FROM {latest} SEMI JOIN {written}
            UNION ALL SELECT {part} AS part FROM {history} WHERE load_date = $day"""
    _log(sql, day, parts)
    for history, (latest, key, _entity, _part) in LATEST.items():
        keys = ", ".join(key)
        # the keys and rows are read from history, which the latest table's writes do not change
        sql.delete(latest, f"SELECT DISTINCT {keys} FROM {history} WHERE load_date = $day", on=key, day=day)
        columns = ", ".join(COLUMNS[history])
        rows = (
            f"SELECT {columns} FROM {history} WHERE load_date = $day"
            if newest
            else f"""SELECT {columns} FROM {history} h SEMI JOIN (
                    SELECT {keys} FROM {history} WHERE load_date = $day) n USING ({keys})
                QUALIFY row_number() OVER (PARTITION BY {keys} ORDER BY h.load_date DESC) = 1"""
        )
        sql.insert_from(latest, rows, day=day)


def log_removal(sql: Sql, day: str) -> None:
    """Before ``day``'s history rows are removed to fold it again: the partitions they sit in are
    logged as a change of ``day``, so the published copy rewrites ``day``'s as-of rows even when
    the fold writes none back and the state's content hash stays (a row moved to an earlier date)."""
    _log(
        sql,
        day,
        {
            entity: f"SELECT {part} AS part FROM {history} WHERE load_date = $day"
            for history, (_latest, _key, entity, part) in LATEST.items()
        },
    )


def retract(sql: Sql, day: str) -> None:
    """After ``day``'s history rows were removed: each key whose newest row was ``day``'s takes
    its newest remaining row (none: the key did not exist before); the partitions the removed
    rows leave and the restored rows join are logged."""
    parts = {}
    for history, (latest, key, entity, part) in LATEST.items():
        keys = ", ".join(key)
        retracted = f"_retracted_{entity}"
        sql.keep(retracted, f"SELECT * FROM {latest} WHERE load_date = $day", day=day)
        sql.delete(latest, "SELECT $day AS load_date", on=("load_date",), day=day)
        columns = ", ".join(COLUMNS[history])
        sql.insert_from(
            latest,
            f"""SELECT {columns} FROM {history} h SEMI JOIN {retracted} r USING ({keys})
            QUALIFY row_number() OVER (PARTITION BY {keys} ORDER BY h.load_date DESC) = 1""",
        )
        parts[entity] = f"""SELECT {part} AS part FROM {retracted}
            UNION ALL SELECT {part} AS part FROM {latest} SEMI JOIN {retracted} r USING ({keys})"""
    _log(sql, day, parts)


def changed_parts(sql: Sql, since: int) -> dict[str, set[str]] | None:
    """Per entity, the published partitions changed after generation ``since``; None when the
    log no longer holds every change after it (pruning dropped some): all may have changed."""
    if since < _pointer(sql, DROPPED):
        return None
    found = sql.rows(
        "SELECT DISTINCT entity, part FROM latest_changes WHERE generation > $since", since=since
    )
    out: dict[str, set[str]] = {entity: set() for _t, _k, entity, _p in LATEST.values()}
    for row in found:
        out[str(row["entity"])].add(str(row["part"]))
    return out


def generation(sql: Sql) -> int:
    """The newest change generation logged (pruning deletes only generations up to ``DROPPED``,
    so this never goes back)."""
    found = sql.rows("SELECT coalesce(max(generation), 0) AS g FROM latest_changes")
    return max(int(found[0]["g"]) if found else 0, _pointer(sql, DROPPED))


def drop_changes(sql: Sql, day: str) -> None:
    """Pruning ``day``: its change-log rows go; a copy exported before the newest of them
    rewrites every partition (``changed_parts`` returns None)."""
    found = sql.rows("SELECT max(generation) AS g FROM latest_changes WHERE load_date <= $day", day=day)
    if not found or found[0]["g"] is None:
        return
    # kept first: a delete never reads the table it deletes from
    sql.keep(
        "_dropped_changes", "SELECT DISTINCT load_date FROM latest_changes WHERE load_date <= $day", day=day
    )
    sql.delete("latest_changes", "SELECT load_date FROM _dropped_changes", on=("load_date",))
    dropped = max(_pointer(sql, DROPPED), int(found[0]["g"]))
    sql.upsert("pointers", [{"name": DROPPED, "value": str(dropped)}], on=("name",))


def differences(sql: Sql) -> int:
    """Rows by which the latest tables differ from each key's newest history row (the audit:
    0 while the invariant holds)."""
    total = 0
    for history in LATEST:
        found = sql.rows(latest_rules.differences(history))
        total += int(found[0]["n"]) if found else 0
    return total
