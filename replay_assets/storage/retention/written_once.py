"""Pruning one load date behind the replay horizon (``core/retention.py``), written once for both
engines over the unit's ``Sql``, in the caller's transaction: its raw payloads, staged events
and event-id registry rows go, and every history row it superseded (an older row of a key it
wrote). What stays: the manifests and each file's verified hash and count (``landed_files``),
reconciliation, rejected events and violations, publications, snapshots and every key's newest
row as of the date, tombstones included, so the state as of the pruned date and every later one
is exact.

Pruned in load-date order, the history of dates up to the last pruned one holds one row per key
(each date removes what it superseded), and each pruning reads only that date's own keys.

The evidence of work done before the pruned date was applied goes with it, by the shared rules
(``rules/retention.py``, which says what goes and what stays), in their order: each rule's keys
are kept before its delete, so no delete reads the table it deletes from."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable

from replay_assets.storage.apply import latest
from replay_assets.storage.rules.retention import PRUNED_EVIDENCE
from replay_assets.storage.rules.sql import Sql
from replay_assets.storage.rules.tables import HISTORY_KEYS, PER_DATE, PRUNED_THROUGH

# An engine's removal of a per-date table's rows of a day (DuckDB's landing views go with their
# files' register rows): (table, day) -> the rows removed.
DropDate = Callable[[str, str], int]


def count(sql: Sql, source: str, **params: object) -> int:
    """The rows of ``source``, what follows ``FROM`` (a relation, and a condition if any)."""
    found = sql.rows(f"SELECT count(*) AS n FROM {source}", **params)
    return int(found[0]["n"]) if found else 0


def drop_date(sql: Sql, table: str, day: str) -> int:
    """A per-date table's rows of ``day`` removed; how many (any engine)."""
    removed = count(sql, f"{table} WHERE load_date = $day", day=day)
    if removed:
        sql.delete(table, "SELECT $day AS load_date", on=("load_date",), day=day)
    return removed


def prune_load_date(
    sql: Sql, day: str, *, operation_id: str, keep: int, now: dt.datetime, drop: DropDate
) -> dict[str, int]:
    """Prune ``day`` (the oldest unpruned applied date behind the horizon); returns the rows
    removed per kind, also recorded in ``pruned_load_dates``."""
    removed = {kind: drop(table, day) for table, kind in PER_DATE.items()}
    history = 0
    for table, key in HISTORY_KEYS.items():
        keys = ", ".join(key)
        superseded = f"_superseded_{table}"
        sql.keep(
            superseded,
            f"""SELECT {", ".join(f"h.{c}" for c in key)}, h.load_date FROM {table} h
            SEMI JOIN (SELECT {keys} FROM {table} WHERE load_date = $day) n
              ON {" AND ".join(f"h.{c} = n.{c}" for c in key)}
            WHERE h.load_date < $day""",
            day=day,
        )
        found = count(sql, superseded)
        if found:
            sql.delete(table, f"SELECT * FROM {superseded}", on=(*key, "load_date"))
        history += found
    removed["history_rows"] = history
    # an adapter's source records go with the raw receipts they became (not counted apart)
    sql.delete("source_records", "SELECT $day AS load_date", on=("load_date",), day=day)
    for n, rule in enumerate(PRUNED_EVIDENCE):
        kept = f"_pruned_evidence_{n}"
        sql.keep(kept, rule.select, day=day)
        if count(sql, kept):
            sql.delete(rule.table, f"SELECT * FROM {kept}", on=rule.keys, where=rule.also)
    latest.drop_changes(sql, day)
    sql.insert(
        "pruned_load_dates",
        [
            {
                "load_date": day,
                "operation_id": operation_id,
                "retention_load_dates": keep,
                **removed,
                "pruned_at": now,
            }
        ],
    )
    sql.upsert("pointers", [{"name": PRUNED_THROUGH, "value": day}], on=("name",))
    return removed
