"""Partition status per asset: one row per (asset, partition), with the reason."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable

import duckdb

from replay_assets.core.status import PartitionStatus
from replay_assets.storage.rules.evidence import status_values


def set_status(
    con: duckdb.DuckDBPyConnection,
    asset: str,
    keys: Iterable[str],
    status: PartitionStatus,
    reason: str,
    now: dt.datetime,
    last_good: tuple[int, str] | None = None,
) -> None:
    """Upsert the status of partitions; the last good version is kept unless a new one is given.
    One statement for every key (a load date marks up to every business date it touched)."""
    distinct = sorted(set(keys))
    if not distinct:
        return
    con.execute(
        """INSERT INTO partition_status (asset, partition_key, status, reason, last_good_version,
            last_good_sha256, updated_at)
        SELECT $asset, unnest($keys), $status, $reason, $last_good_version, $last_good_sha256, $updated_at
           ON CONFLICT (asset, partition_key) DO UPDATE SET status = excluded.status,
             reason = excluded.reason, updated_at = excluded.updated_at,
             last_good_version = coalesce(excluded.last_good_version,
                                          partition_status.last_good_version),
             last_good_sha256 = coalesce(excluded.last_good_sha256,
                                         partition_status.last_good_sha256)""",
        {"asset": asset, "keys": distinct, **status_values(status, reason, now, last_good)},
    )
