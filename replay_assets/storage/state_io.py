"""Reads of working state for the fold: state as of a load date, registry look-ups, snapshots."""

from __future__ import annotations

from typing import Any

import duckdb
import polars as pl

from replay_assets.core.aggregate import content_sha256
from replay_assets.core.events import canonical_json, sha256_text
from replay_assets.core.fold import COMMITTED_SCHEMA, REGISTRY_SCHEMA
from replay_assets.storage.migrations import CUSTOMER_COLUMNS, ORDER_COLUMNS
from replay_assets.storage.warehouse import query_frame

ORDER_KEY_SQL = "'[\"' || order_id || '\",' || CAST(line_no AS VARCHAR) || ']'"
CUSTOMER_KEY_SQL = "'[\"' || customer_id || '\"]'"


def _frame(
    con: duckdb.DuckDBPyConnection, sql: str, params: list[Any], frames: dict[str, pl.DataFrame]
) -> pl.DataFrame:
    for name, frame in frames.items():
        con.register(name, frame)
    try:
        return query_frame(con, sql, params)
    finally:
        for name in frames:
            con.unregister(name)


def committed_before(con: duckdb.DuckDBPyConnection, events: pl.DataFrame, load_date: str) -> pl.DataFrame:
    """Each touched key's state as of the load date before ``load_date`` (fold's COMMITTED_SCHEMA)."""
    keys = events.select("entity", "key", "order_id", "line_no", "customer_id").unique()
    sql = f"""
        SELECT 'order_line' AS entity, {ORDER_KEY_SQL} AS key, version, image_sha256
        FROM order_history h SEMI JOIN _keys k
          ON k.entity = 'order_line' AND h.order_id = k.order_id AND h.line_no = k.line_no
        WHERE h.load_date < ?
        QUALIFY row_number() OVER (PARTITION BY h.order_id, h.line_no ORDER BY h.load_date DESC) = 1
        UNION ALL
        SELECT 'customer', {CUSTOMER_KEY_SQL}, version, image_sha256
        FROM customer_history h SEMI JOIN _keys k
          ON k.entity = 'customer' AND h.customer_id = k.customer_id
        WHERE h.load_date < ?
        QUALIFY row_number() OVER (PARTITION BY h.customer_id ORDER BY h.load_date DESC) = 1"""
    out = _frame(con, sql, [load_date, load_date], {"_keys": keys})
    return out.cast(COMMITTED_SCHEMA) if out.height else pl.DataFrame(schema=COMMITTED_SCHEMA)


def old_groups(con: duckdb.DuckDBPyConnection, winners: pl.DataFrame, load_date: str) -> pl.DataFrame:
    """(business_date, store_id) of the winners' previous images: the groups they leave."""
    sql = """
        SELECT h.business_date, h.store_id FROM order_history h SEMI JOIN _keys k
          ON h.order_id = k.order_id AND h.line_no = k.line_no
        WHERE h.load_date < ?
        QUALIFY row_number() OVER (PARTITION BY h.order_id, h.line_no ORDER BY h.load_date DESC) = 1"""
    keys = winners.filter(pl.col("entity") == "order_line").select("order_id", "line_no")
    out = _frame(con, sql, [load_date], {"_keys": keys})
    return out.drop_nulls()


def registry_for(con: duckdb.DuckDBPyConnection, events: pl.DataFrame, load_date: str) -> pl.DataFrame:
    """Registry rows committed before ``load_date`` that share an event id or a source_seq."""
    ids = events.select("source", "event_id", "source_seq").unique()
    sql = """
        SELECT source, event_id, source_seq, content_sha256 FROM event_registry r
        WHERE r.load_date < ? AND (
          EXISTS (SELECT 1 FROM _ids i WHERE i.source = r.source AND i.event_id = r.event_id)
          OR EXISTS (SELECT 1 FROM _ids i WHERE i.source = r.source AND i.source_seq = r.source_seq))"""
    out = _frame(con, sql, [load_date], {"_ids": ids})
    return out.cast(REGISTRY_SCHEMA) if out.height else pl.DataFrame(schema=REGISTRY_SCHEMA)


def orders_as_of(con: duckdb.DuckDBPyConnection, load_date: str) -> pl.DataFrame:
    cols = ", ".join(ORDER_COLUMNS)
    sql = f"""SELECT {cols}, version FROM order_history WHERE load_date <= ?
        QUALIFY row_number() OVER (PARTITION BY order_id, line_no ORDER BY load_date DESC) = 1"""
    return query_frame(con, sql, [load_date])


def customers_as_of(con: duckdb.DuckDBPyConnection, load_date: str) -> pl.DataFrame:
    cols = ", ".join(CUSTOMER_COLUMNS)
    sql = f"""SELECT {cols}, version FROM customer_history WHERE load_date <= ?
        QUALIFY row_number() OVER (PARTITION BY customer_id ORDER BY load_date DESC) = 1"""
    return query_frame(con, sql, [load_date])


def snapshot_digest(orders: pl.DataFrame, customers: pl.DataFrame) -> str:
    """Content hash of a state snapshot: its images and versions, not where they came from."""
    parts = {
        "orders": content_sha256(orders, ["order_id", "line_no"]),
        "customers": content_sha256(customers, ["customer_id"]),
    }
    return sha256_text(canonical_json(parts))


def history_rows(con: duckdb.DuckDBPyConnection, table: str, load_date: str) -> pl.DataFrame:
    """The rows a load date wrote to one history table, in key order (for replay comparison)."""
    key = "order_id, line_no" if table == "order_history" else "customer_id"
    return query_frame(
        con, f"SELECT * EXCLUDE (load_date) FROM {table} WHERE load_date = ? ORDER BY {key}", [load_date]
    )
