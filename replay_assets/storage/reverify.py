"""Re-verification of what is published: recompute each publication from history as of its own
``as_of_load_date`` (never from live working state) and compare content hashes. Read-only."""

from __future__ import annotations

from dataclasses import dataclass

import duckdb
import polars as pl

from replay_assets.core.aggregate import aggregate_frame, content_sha256
from replay_assets.storage.publish import AGG_KEY, lines_for_dates
from replay_assets.storage.state_io import customers_as_of, orders_as_of, snapshot_digest
from replay_assets.storage.warehouse import query_frame

LATEST = """
    SELECT partition_key, version, as_of_load_date, content_sha256 FROM publications WHERE asset = ?
    QUALIFY row_number() OVER (PARTITION BY partition_key ORDER BY version DESC) = 1
    ORDER BY partition_key"""


@dataclass(frozen=True)
class Verdict:
    checked: int
    mismatched: list[str]  # partition keys whose publication differs from its recomputation


def reverify_aggregates(con: duckdb.DuckDBPyConnection) -> Verdict:
    latest = query_frame(con, LATEST, ["daily_aggregates"])
    bad = []
    for (as_of,), group in latest.group_by("as_of_load_date"):
        dates = group["partition_key"].to_list()
        rows = aggregate_frame(lines_for_dates(con, str(as_of), dates))
        for key, digest in group.select("partition_key", "content_sha256").iter_rows():
            if content_sha256(rows.filter(pl.col("business_date") == key), AGG_KEY) != digest:
                bad.append(str(key))
    return Verdict(latest.height, sorted(bad))


def reverify_state(con: duckdb.DuckDBPyConnection, newest: int = 7) -> Verdict:
    """The newest ``newest`` certified load-date snapshots (each a full-state recomputation)."""
    latest = query_frame(con, LATEST, ["current_orders"]).tail(newest)
    bad = [
        str(key)
        for key, digest in latest.select("partition_key", "content_sha256").iter_rows()
        if snapshot_digest(orders_as_of(con, str(key)), customers_as_of(con, str(key))) != digest
    ]
    return Verdict(latest.height, bad)
