"""An operator's relanding of one batch, in the warehouse (``batch_relandings``, its landed rows
removed; a skip is written once for both engines in ``written_once.py``). The facts those
decisions are refused or allowed on are read by ``landing/reading.py``."""

from __future__ import annotations

import datetime as dt

import duckdb

from replay_assets.storage.db import segments
from replay_assets.storage.db.warehouse import one
from replay_assets.storage.rules.tables import LANDED_TABLES


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
    """Record the relanding (with the schema-gate ``violations`` and the rejections it undoes),
    then remove the batch's landed rows so the next run lands the same files again (its segment
    files, no longer registered, go at the next ``segments.sweep``)."""
    rejected = one(con, "SELECT count(*) FROM rejected_events WHERE batch_id = ?", [batch_id])
    con.execute(
        "INSERT INTO batch_relandings (batch_id, load_date, manifest_sha256, violations, rejected, "
        "note, operator, relanded_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        [
            batch_id,
            load_date,
            manifest_sha256,
            violations,
            rejected[0] if rejected else 0,
            note,
            operator,
            now,
        ],
    )
    for table in LANDED_TABLES:  # constant names; a landing view's rows go from its table and files
        if table in segments.BY_VIEW:
            segments.delete(con, table, "batch_id = $batch", {"batch": batch_id})
        else:
            con.execute(f"DELETE FROM {table} WHERE batch_id = ?", [batch_id])
