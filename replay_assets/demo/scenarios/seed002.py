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
BACKFILL = {
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
    return write_delivery(landing, SOURCE, FIRST_DAY, "POS-1002", lines(events), f"{FIRST_DAY}T12:00:00Z")


def deliver_replay_and_late(landing: Path) -> Path:
    """An exact replay of e5, an older update of the deleted r2 under a new id, and a receipt for
    2026-10-01 after that day was published."""
    data = receipts()
    events = [data["events"][4], data["stale_update"], data["late_receipt"]]
    return write_delivery(landing, SOURCE, LATE_DAY, "POS-1003", lines(events), f"{LATE_DAY}T12:00:00Z")


def deliver_unbalanced_day(landing: Path, day: str) -> Path:
    """A day with one malformed line (rejected); a test then deletes its rejection evidence."""
    return write_delivery(landing, SOURCE, day, f"POS-{day}", ['{"event_id": "broken"'], f"{day}T12:00:00Z")


def deliver_backfill_case(landing: Path) -> None:
    """A certified day, a day never delivered, then three delivered days after the gap."""
    events = receipts()["events"]
    write_delivery(
        landing, SOURCE, BACKFILL["certified"], "POS-0930", lines(events[:4]), "2026-09-30T12:00:00Z"
    )
    for n, day in enumerate(BACKFILL["range"]):
        chunk = events[4 + 2 * n : 6 + 2 * n]
        write_delivery(landing, SOURCE, day, f"POS-{day}", lines(chunk), f"{day}T12:00:00Z")
