"""What an operator reads of the evidence, written once for both engines over the unit's ``Sql``:
partition status with failed candidates and cost evidence, the reconciliation per load date, and
which exports are refused."""

from __future__ import annotations

from typing import Any

from replay_assets.core import retention
from replay_assets.core.errors import ErrorCode, ReplayError
from replay_assets.storage.apply.reading import pruned_through
from replay_assets.storage.rules.evidence import BATCH_COSTS
from replay_assets.storage.rules.published import AS_OF, RECONCILE_SQL, TABLES
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


def check_export(sql: Sql, name: str, as_of: str | None) -> None:
    """Refuses an export of a table not on the allow-list (never a name pasted from input), and
    an as-of read of a table without one or behind the retention horizon."""
    if as_of is None:
        if name not in TABLES:
            raise ReplayError(ErrorCode.USAGE, f"unknown table {name}")
        return
    if name not in AS_OF:
        raise ReplayError(ErrorCode.USAGE, f"--as-of applies to {', '.join(AS_OF)}, not {name}")
    behind = retention.refusal(as_of, pruned_through(sql), "an as-of read")
    if behind:
        raise ReplayError(ErrorCode.BEHIND_HORIZON, behind)
