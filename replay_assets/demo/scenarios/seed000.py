"""Seed 000 (repair daily reports after corrected orders): three batches, the last replayed."""

from __future__ import annotations

from pathlib import Path

from replay_assets.core.adapters import adapt_seed000
from replay_assets.demo.scenarios import fixture
from replay_assets.storage.landing.deliveries import write_delivery

SOURCE = "orders"
LOAD_DATES = {"initial": "2026-01-02", "corrections": "2026-01-03", "late": "2026-01-04"}
NOW = "2026-01-05T12:00:00Z"


def batches() -> dict[str, list[str]]:
    demo = fixture("seed000_demo_batches.json")
    return adapt_seed000(demo["batches"], demo["delivery_sequence"])


def deliver(landing: Path, batch_id: str) -> Path:
    """Land one of the demo batches on its load date (re-delivery writes identical files)."""
    day = LOAD_DATES[batch_id]
    return write_delivery(
        landing,
        SOURCE,
        load_date=day,
        batch_id=batch_id,
        lines=batches()[batch_id],
        ready_at=f"{day}T06:00:00Z",
    )
