"""Seed 002 (replayable receipt pipeline with an atomic publish gate), from our own fixture."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from replay_assets.demo.scenarios import fixture
from replay_assets.storage.landing.deliveries import write_delivery

SOURCE = "pos"
FIRST_DAY, LATE_DAY = "2026-10-02", "2026-10-03"
NOW = "2026-10-06T12:00:00Z"
BACKFILL: dict[str, Any] = {
    "certified": "2026-09-30",
    "never_delivered": "2026-10-01",
    "range": ["2026-10-02", "2026-10-03", "2026-10-04"],
}


def receipts() -> dict[str, Any]:
    return dict(fixture("seed002_receipts.json"))


def lines(events: list[dict[str, Any]]) -> list[str]:
    return [json.dumps(e, sort_keys=True) for e in events]


def deliver_shuffled(landing: Path) -> Path:
    """All nine source events in a shuffled order, applied through their source order."""
    data = receipts()
    events = [data["events"][i] for i in data["shuffled_delivery"]]
    return write_delivery(
        landing,
        SOURCE,
        load_date=FIRST_DAY,
        batch_id="POS-1002",
        lines=lines(events),
        ready_at=f"{FIRST_DAY}T12:00:00Z",
    )


def deliver_replay_and_late(landing: Path) -> Path:
    """An exact replay of e5, an older update of the deleted r2 under a new id, and a receipt for
    2026-10-01 after that day was published."""
    data = receipts()
    events = [data["events"][4], data["stale_update"], data["late_receipt"]]
    return write_delivery(
        landing,
        SOURCE,
        load_date=LATE_DAY,
        batch_id="POS-1003",
        lines=lines(events),
        ready_at=f"{LATE_DAY}T12:00:00Z",
    )


def deliver_unbalanced_day(landing: Path, day: str) -> Path:
    """A day with one malformed line (rejected); a test then deletes its rejection evidence."""
    return write_delivery(
        landing,
        SOURCE,
        load_date=day,
        batch_id=f"POS-{day}",
        lines=['{"event_id": "broken"'],
        ready_at=f"{day}T12:00:00Z",
    )


def deliver_backfill_case(landing: Path) -> None:
    """A certified day, a day never delivered, then three delivered days after the gap."""
    events = receipts()["events"]
    write_delivery(
        landing,
        SOURCE,
        load_date=BACKFILL["certified"],
        batch_id="POS-0930",
        lines=lines(events[:4]),
        ready_at="2026-09-30T12:00:00Z",
    )
    for n, day in enumerate(BACKFILL["range"]):
        chunk = events[4 + 2 * n : 6 + 2 * n]
        write_delivery(
            landing,
            SOURCE,
            load_date=day,
            batch_id=f"POS-{day}",
            lines=lines(chunk),
            ready_at=f"{day}T12:00:00Z",
        )
