"""Evidence rows both engines write the same way: a partition's status columns and a step's
measured cost."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from replay_assets.core.status import PartitionStatus


@dataclass
class Cost:
    cpu_seconds: float = 0.0
    wall_seconds: float = 0.0


def status_values(
    status: PartitionStatus, reason: str, now: dt.datetime, last_good: tuple[int, str] | None
) -> dict[str, object]:
    """The columns an upsert of partitions' status writes."""
    return {
        "status": status.value,
        "reason": reason,
        "last_good_version": last_good[0] if last_good else None,
        "last_good_sha256": last_good[1] if last_good else None,
        "updated_at": now,
    }
