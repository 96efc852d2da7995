"""An operator's relanding of one batch on DuckDB: the record and removal written once
(``written_once.py``), and the landing views' rows removed from their segment files. The facts
the decision is refused or allowed on are read by ``landing/reading.py``."""

from __future__ import annotations

import datetime as dt

import duckdb

from replay_assets.storage.db import segments
from replay_assets.storage.db.sql import DuckDBSql
from replay_assets.storage.evidence import written_once


def record_relanding(
    con: duckdb.DuckDBPyConnection,
    batch_id: str,
    load_date: str,
    manifest_sha256: str,
    *,
    violations: int,
    note: str,
    operator: str,
    now: dt.datetime,
) -> None:
    """``written_once.record_relanding``; a landing view's rows go from its table and its files'
    register (its segment files, no longer registered, go at the next ``segments.sweep``)."""
    written_once.record_relanding(
        DuckDBSql(con),
        batch_id,
        load_date,
        manifest_sha256,
        violations=violations,
        note=note,
        operator=operator,
        now=now,
        apart=segments.BY_VIEW,
    )
    for table in segments.BY_VIEW:
        segments.delete(con, table, "batch_id = $batch", {"batch": batch_id})
