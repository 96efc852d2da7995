"""Evaluating the publish gate against exactly a candidate's state, and recording the verdict:
a certified publication (versioned, monotone) or a failed candidate kept out of view."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from pathlib import Path

import polars as pl

from replay_assets.core.aggregate import Controls
from replay_assets.core.gate import (
    CheckOutcome,
    failures,
)
from replay_assets.core.state import Counts
from replay_assets.core.status import PartitionStatus
from replay_assets.storage.apply.reading import certified_load_dates
from replay_assets.storage.apply.row_checks import Snapshot
from replay_assets.storage.evidence.written_once import EvidenceWriting
from replay_assets.storage.publish import verdicts
from replay_assets.storage.publish.verdicts import checks_json
from replay_assets.storage.rules.sql import Sql


def state_checks(
    sql: Sql,
    day: str,
    snapshot: Snapshot,
    counts: dict[str, Counts],
    first: str,
    recomputed: Controls,
) -> list[CheckOutcome]:
    """The gate of a load date's state snapshot (``verdicts.state_checks``), with the load
    dates certified so far read here."""
    certified = certified_load_dates(sql)
    return verdicts.state_checks(
        day, snapshot, counts, first=first, recomputed=recomputed, certified=certified
    )


def record_failed_candidate(
    sql: Sql,
    home: Path,
    asset: str,
    key: str,
    as_of: str,
    digest: str,
    outcomes: Sequence[CheckOutcome],
    rows: pl.DataFrame,
    run_id: str | None,
    now: dt.datetime,
) -> Path:
    """Keep a failed candidate inspectable (its rows as Parquet, its reasons in the warehouse)
    while the last certified version stays visible."""
    path = verdicts.keep_candidate(home, asset=asset, key=key, digest=digest, rows=rows)
    reason = failures(outcomes)
    row = {
        "asset": asset,
        "partition_key": key,
        "as_of_load_date": as_of,
        "content_sha256": digest,
        "checks": checks_json(outcomes),
        "reason": reason,
        "created_at": now,
        "run_id": run_id,
        "rows_path": str(path),
        "rows_bytes": path.stat().st_size,
    }
    sql.insert("candidates", [row])
    EvidenceWriting(sql).set_status(
        asset, keys=[key], status=PartitionStatus.FAILED_CANDIDATE, reason=reason, now=now
    )
    return path
