"""Pruning on DuckDB: the shared procedure (``written_once.py``, whose docstring says what goes
and what stays) with this engine's removal of a landing table's rows of a day."""

from __future__ import annotations

import datetime as dt

import duckdb

from replay_assets.storage.db import segments
from replay_assets.storage.db.sql import DuckDBSql
from replay_assets.storage.retention import written_once


def prune_load_date(
    con: duckdb.DuckDBPyConnection, day: str, *, operation_id: str, keep: int, now: dt.datetime
) -> dict[str, int]:
    """Prune ``day``; returns the rows removed per kind, also recorded in ``pruned_load_dates``."""
    sql = DuckDBSql(con)

    def drop(table: str, day: str) -> int:
        # a landing view's rows go from its table and its files' register rows; the files
        # themselves when the next writer opens the warehouse (``segments.sweep``)
        if table in segments.BY_VIEW:
            return segments.delete(con, table, "load_date = $day", {"day": day})
        return written_once.drop_date(sql, table, day)

    return written_once.prune_load_date(sql, day, operation_id=operation_id, keep=keep, now=now, drop=drop)
