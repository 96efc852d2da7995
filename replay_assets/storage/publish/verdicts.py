"""The publish gate's decisions that need no engine: a load date's checks from what was read,
whether and how a certification becomes a publication, and what an application left in the
target. Both warehouse adapters call these, so they decide alike (``certify.py`` is DuckDB's)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from replay_assets.core.aggregate import Controls
from replay_assets.core.gate import CheckOutcome, check_completeness, check_reconciliation, check_totals
from replay_assets.core.state import Counts
from replay_assets.core.status import PartitionStatus
from replay_assets.storage.apply.row_checks import Snapshot
from replay_assets.storage.home.files import atomic_write
from replay_assets.storage.rules.tables import RECON_COLUMNS


def counts_frame(counts: dict[str, Counts]) -> pl.DataFrame:
    return pl.DataFrame(
        [{"batch_id": b, **c.__dict__} for b, c in counts.items()],
        schema={c: (pl.String if c == "batch_id" else pl.Int64) for c in RECON_COLUMNS},
    )


def state_checks(
    day: str,
    snapshot: Snapshot,
    counts: dict[str, Counts],
    *,
    first: str,
    recomputed: Controls,
    certified: set[str],
) -> list[CheckOutcome]:
    """The gate of a load date's state snapshot (orders and customers as of ``day``): its row
    verdicts, its controls against ``recomputed`` (the same controls by another path), its
    batches' reconciliation, and every load date from ``first`` certified before it."""
    return [
        snapshot.schema,
        snapshot.unique_keys,
        check_reconciliation(counts_frame(counts)),
        check_totals(snapshot.controls, recomputed),
        check_completeness(day, first, certified),
        snapshot.non_negative,
    ]


def checks_json(outcomes: Sequence[CheckOutcome]) -> str:
    return json.dumps(
        {str(o.check): {"passed": o.passed, "summary": o.summary} for o in outcomes}, sort_keys=True
    )


@dataclass(frozen=True)
class Publishing:
    """What certifying a partition does: a new ``version`` with its ``reason`` (None: nothing
    new is published, the partition's status says why) and the status it takes."""

    version: int | None
    status: PartitionStatus
    reason: str


def publishing(
    last: tuple[int, str, str] | None, as_of: str, digest: str, repair_reason: str | None
) -> Publishing:
    """A new version when the content changed and ``as_of`` is not older than the last
    publication (``last``: version, content hash, as-of load date; monotone). A repair always
    publishes a new version, with its reason, as the audit trail of the fix."""
    if repair_reason is None and last is not None and (last[1] == digest or last[2] > as_of):
        status = PartitionStatus.RESTATED if last[0] > 1 else PartitionStatus.CERTIFIED
        return Publishing(
            None, status, "unchanged: re-audited" if last[1] == digest else "a newer publication stays"
        )
    version = 1 if last is None else last[0] + 1
    reason = repair_reason or ("first publication" if last is None else f"restated as of load date {as_of}")
    return Publishing(
        version, PartitionStatus.CERTIFIED if version == 1 else PartitionStatus.RESTATED, reason
    )


def keep_candidate(home: Path, *, asset: str, key: str, digest: str, rows: pl.DataFrame) -> Path:
    """A failed candidate's rows as Parquet under the home, for inspection (any engine)."""
    path = home / "candidates" / asset / key / f"{digest[:16]}.parquet"
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    rows.write_parquet(tmp)
    atomic_write(path, tmp.read_bytes())
    tmp.unlink()
    return path
