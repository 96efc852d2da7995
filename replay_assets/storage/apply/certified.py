"""What is certified, as applying a load date reads it: the certified pointer, the newest
publication of a partition, the controls recomputed by SQL, and the digest of what applying a
load date left in the target (the journal compares it on a retry)."""

from __future__ import annotations

import duckdb

from replay_assets.core.aggregate import Controls
from replay_assets.storage.db.warehouse import one
from replay_assets.storage.rules.digest import target_digest_of

SQL_CONTROLS = """
    SELECT count(*) FILTER (WHERE status = 'active'),
           count(DISTINCT order_id) FILTER (WHERE status = 'active'),
           coalesce(sum(quantity) FILTER (WHERE status = 'active'), 0),
           coalesce(sum(amount_minor) FILTER (WHERE status = 'active'), 0),
           coalesce(sum(cost_minor) FILTER (WHERE status = 'active'), 0),
           coalesce(sum(amount_minor - cost_minor) FILTER (WHERE status = 'active'), 0)
    FROM orders_as_of(?)"""


def pointer(con: duckdb.DuckDBPyConnection) -> str | None:
    row = one(con, "SELECT value FROM pointers WHERE name = 'published_load_date'")
    return str(row[0]) if row else None


def recomputed_controls(con: duckdb.DuckDBPyConnection, day: str) -> Controls:
    """Controls by SQL over the history macro: a path independent of the polars one."""
    row = one(con, SQL_CONTROLS, [day])
    assert row is not None
    return Controls(*(int(v) for v in row))


def last_publication(con: duckdb.DuckDBPyConnection, asset: str, key: str) -> tuple[int, str, str] | None:
    row = one(
        con,
        """SELECT version, content_sha256, as_of_load_date FROM publications
                      WHERE asset = ? AND partition_key = ? ORDER BY version DESC LIMIT 1""",
        [asset, key],
    )
    return (int(row[0]), str(row[1]), str(row[2])) if row else None


def target_digest(con: duckdb.DuckDBPyConnection, day: str, state_digest: str) -> str:
    """What applying a load date left in the target (``target_digest_of``). A retry
    compares it with the journal's record (drift means repair)."""
    snap = one(con, "SELECT * EXCLUDE (load_date) FROM snapshots WHERE load_date = ?", [day])
    pub = last_publication(con, "current_orders", day)
    return target_digest_of(state_digest, snap, pub[1] if pub else None)
