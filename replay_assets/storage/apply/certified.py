"""The controls of a certified state recomputed by SQL over the history macro (DuckDB only: the
gate's path independent of the fold's). The rest of what is certified is read by ``reading.py``."""

from __future__ import annotations

import duckdb

from replay_assets.core.aggregate import Controls
from replay_assets.storage.db.warehouse import one

SQL_CONTROLS = """
    SELECT count(*) FILTER (WHERE status = 'active'),
           count(DISTINCT order_id) FILTER (WHERE status = 'active'),
           coalesce(sum(quantity) FILTER (WHERE status = 'active'), 0),
           coalesce(sum(amount_minor) FILTER (WHERE status = 'active'), 0),
           coalesce(sum(cost_minor) FILTER (WHERE status = 'active'), 0),
           coalesce(sum(amount_minor - cost_minor) FILTER (WHERE status = 'active'), 0)
    FROM orders_as_of(?)"""


def recomputed_controls(con: duckdb.DuckDBPyConnection, day: str) -> Controls:
    """Controls by SQL over the history macro: a path independent of the polars one."""
    row = one(con, SQL_CONTROLS, [day])
    assert row is not None
    return Controls(*(int(v) for v in row))
