"""What an operator reads of the evidence, written once for both engines over the unit's ``Sql``:
partition status with failed candidates and cost evidence, and the reconciliation per load date."""

from __future__ import annotations

from typing import Any

from replay_assets.storage.rules.evidence import BATCH_COSTS
from replay_assets.storage.rules.published import RECONCILE_SQL, TABLES
from replay_assets.storage.rules.sql import Sql

_CANDIDATES = """SELECT asset, partition_key, as_of_load_date, reason, rows_path, rows_bytes, created_at
    FROM candidates ORDER BY created_at"""


def status_report(sql: Sql) -> dict[str, list[dict[str, object]]]:
    """Partition status with the last good version, failed candidates and cost evidence."""
    return {
        "partitions": sql.frame(TABLES["partition_status"]).to_dicts(),
        "candidates": sql.frame(_CANDIDATES).to_dicts(),
        "costs": sql.frame("SELECT * FROM costs ORDER BY recorded_at, step, partition_key").to_dicts(),
        "batch_costs": sql.rows(BATCH_COSTS),
    }


def reconciliation_report(sql: Sql) -> list[dict[str, Any]]:
    """Per load date: the reconciliation sums and whether they add up (source events = accepted
    + rejected + skipped)."""
    return sql.frame(RECONCILE_SQL).to_dicts()
