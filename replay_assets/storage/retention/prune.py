"""Pruning one load date behind the replay horizon (``core/retention.py``), in the
caller's transaction: its raw payloads, staged events and event-id registry rows go, and every
history row it superseded (an older row of a key it wrote). What stays: the manifests and each
file's verified hash and count (``landed_files``), reconciliation, rejected events and
violations, publications, snapshots and every key's newest row as of the date, tombstones
included, so the state as of the pruned date and every later one is exact.

Pruned in load-date order, the history of dates up to the last pruned one holds one row per key
(each date removes what it superseded), and each pruning reads only that date's own keys.

The evidence of work done before the pruned date was applied goes with it, by the rules both
engines share (``rules/retention.py``, which says what goes and what stays)."""

from __future__ import annotations

import datetime as dt

import duckdb

from replay_assets.storage.apply import latest
from replay_assets.storage.db import segments
from replay_assets.storage.db.sql import DuckDBSql
from replay_assets.storage.rules.retention import PRUNED_EVIDENCE
from replay_assets.storage.rules.tables import HISTORY_KEYS, PER_DATE, PRUNED_THROUGH


def _deleted(con: duckdb.DuckDBPyConnection, sql: str, params: dict[str, object]) -> int:
    found = con.execute(sql, params).fetchall()
    return int(found[0][0]) if found else 0


def prune_load_date(
    con: duckdb.DuckDBPyConnection, day: str, *, operation_id: str, keep: int, now: dt.datetime
) -> dict[str, int]:
    """Prune ``day`` (the oldest unpruned applied date behind the horizon); returns the rows
    removed per kind, also recorded in ``pruned_load_dates``."""
    params: dict[str, object] = {"day": day}
    removed = {
        # a landing view's rows go from its table and its files' register rows (schema v13); the
        # files themselves when the next writer opens the warehouse (``segments.sweep``)
        kind: segments.delete(con, table, "load_date = $day", params)
        if table in segments.BY_VIEW
        else _deleted(con, f"DELETE FROM {table} WHERE load_date = $day", params)
        for table, kind in PER_DATE.items()
    }
    history = 0
    for table, key in HISTORY_KEYS.items():
        same_key = " AND ".join(f"h.{c} = n.{c}" for c in key)
        history += _deleted(
            con,
            f"""DELETE FROM {table} h USING (SELECT {", ".join(key)} FROM {table} WHERE load_date = $day) n
            WHERE h.load_date < $day AND {same_key}""",
            params,
        )
    removed["history_rows"] = history
    # an adapter's source records go with the raw receipts they became (not counted apart)
    con.execute("DELETE FROM source_records WHERE load_date = $day", params)
    _prune_evidence(con, params)
    latest.drop_changes(DuckDBSql(con), day)
    con.execute(
        "INSERT INTO pruned_load_dates (load_date, operation_id, retention_load_dates, raw_receipts, "
        "staged_events, registry_rows, history_rows, pruned_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        [
            day,
            operation_id,
            keep,
            removed["raw_receipts"],
            removed["staged_events"],
            removed["registry_rows"],
            history,
            now,
        ],
    )
    con.execute("INSERT OR REPLACE INTO pointers (name, value) VALUES (?, ?)", [PRUNED_THROUGH, day])
    return removed


def _prune_evidence(con: duckdb.DuckDBPyConnection, params: dict[str, object]) -> None:
    """The journal's, attempts' and costs' rows of work before the pruned date was applied, by
    the shared rules (``rules/retention.py``, which says what stays)."""
    for rule in PRUNED_EVIDENCE:
        con.execute(f"DELETE FROM {rule.table} t USING ({rule.select}) s WHERE {rule.match()}", params)
