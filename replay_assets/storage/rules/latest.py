"""Each key's newest history row, kept as a table (``order_latest``, ``customer_latest``): which
table mirrors which history, by what key, and the columns of a row."""

from __future__ import annotations

from replay_assets.storage.rules.tables import CUSTOMER_COLUMNS, ORDER_COLUMNS

# history table -> (latest table, key, entity, the cohort of the published current state a row
# sits in: the load date that wrote it, so a day's new keys join one new cohort and leave every
# other as it was); constants only
COHORT = "CAST(load_date AS VARCHAR)"
LATEST = {
    "order_history": ("order_latest", ("order_id", "line_no"), "orders", COHORT),
    "customer_history": ("customer_latest", ("customer_id",), "customers", COHORT),
}
_ROW = ("version", "source_seq", "image_sha256", "load_date")
COLUMNS = {"order_history": (*ORDER_COLUMNS, *_ROW), "customer_history": (*CUSTOMER_COLUMNS, *_ROW)}
DROPPED = "latest_changes_dropped"  # pointer: the newest change pruning removed from the log


def differences(history: str) -> str:
    """How many rows the latest table of ``history`` and each key's newest history row differ by
    (the audit: 0 while the invariant holds). Named columns, so Spark's rendering of ``QUALIFY``
    (a subquery with a row-number column) leaves the row shape as DuckDB's."""
    latest, key, _entity, _part = LATEST[history]
    columns = ", ".join(COLUMNS[history])
    newest = f"""SELECT {columns} FROM {history}
        QUALIFY row_number() OVER (PARTITION BY {", ".join(key)} ORDER BY load_date DESC) = 1"""
    held = f"SELECT {columns} FROM {latest}"
    return f"""SELECT count(*) AS n FROM (({held} EXCEPT ALL {newest})
        UNION ALL ({newest} EXCEPT ALL {held})) d"""
