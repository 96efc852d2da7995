"""Seed 001 (incremental CDC lab): a baseline load date, then CDC deliveries."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from replay_assets.core.adapters import Adapter, adapt_lines
from replay_assets.core.events import canonical_json
from replay_assets.demo.scenarios import fixture
from replay_assets.storage.landing.deliveries import write_delivery

SOURCE = "erp"
BASELINE_DATE = "2026-09-20"
CDC_DATE = "2026-09-21"
NOW = "2026-09-24T12:00:00Z"
BASELINE_CUSTOMER_TIME = "2026-09-20T00:00:00Z"  # customers carry no time in the fixture


def baseline_events() -> list[dict[str, Any]]:
    """The fixture's baseline rows as seed-001 insert events (their own source_seq)."""
    events: list[dict[str, Any]] = []
    for row in fixture("seed001_baseline_sales.json")["rows"]:
        after = {k: row[k] for k in ("order_id", "line_no", "customer_id", "product_id", "quantity")}
        after.update(
            extended_amount=row["extended_amount"], extended_cost=row["extended_cost"], status=row["status"]
        )
        events.append(
            _event(
                row["source_seq"],
                "sale",
                key=f"{row['order_id']}|{row['line_no']}",
                when=row["event_ts"],
                after=after,
            )
        )
    for row in fixture("seed001_baseline_customers.json")["rows"]:
        after = {k: row[k] for k in ("customer_id", "name", "segment")}
        events.append(
            _event(
                row["source_seq"],
                "customer",
                key=row["customer_id"],
                when=BASELINE_CUSTOMER_TIME,
                after=after,
            )
        )
    return events


def _event(seq: int, entity: str, key: str, when: str, after: dict[str, Any]) -> dict[str, Any]:
    return {
        "event_id": f"base{seq}",
        "source_seq": seq,
        "schema_version": 1,
        "entity": entity,
        "op": "I",
        "key": key,
        "event_ts": when,
        "source_updated_at": when,
        "after": after,
    }


def cdc_events() -> list[dict[str, Any]]:
    """The fixture's delivery sequence: e201..e206 with e201 and e202 delivered twice."""
    events = fixture("seed001_events.json")["events"]
    return [events[i] for i in fixture("seed001_delivery_sequence.json")["index_into_events"]]


def native(events: list[dict[str, Any]]) -> list[str]:
    return adapt_lines(Adapter.SEED001, [canonical_json(e) for e in events])


def deliver_baseline(landing: Path) -> Path:
    return write_delivery(
        landing,
        SOURCE,
        load_date=BASELINE_DATE,
        batch_id="B20260920-BASELINE",
        lines=native(baseline_events()),
        ready_at="2026-09-20T08:00:00Z",
        seq_range=(0, 200),
    )


def deliver_cdc(landing: Path, batch_id: str, load_date: str, ready_at: str) -> Path:
    return write_delivery(
        landing,
        SOURCE,
        load_date=load_date,
        batch_id=batch_id,
        lines=native(cdc_events()),
        ready_at=ready_at,
        seq_range=(201, 206),
    )


def deliver_breaking(landing: Path, load_date: str) -> Path:
    event = fixture("seed001_breaking_event.json")["event"]
    return write_delivery(
        landing,
        SOURCE,
        load_date=load_date,
        batch_id="B20260923-CDC-D",
        lines=native([event]),
        ready_at=f"{load_date}T08:20:00Z",
        seq_range=(207, 207),
    )


def deliver_shuffled(landing: Path, seed: int, batches: int = 3) -> list[Path]:
    """The CDC events shuffled (duplicates included) across ``batches`` load dates."""
    lines = native(cdc_events())
    random.Random(seed).shuffle(lines)
    size = -(-len(lines) // batches)
    out = []
    for n in range(batches):
        day = f"2026-09-{21 + n:02d}"
        out.append(
            write_delivery(
                landing,
                SOURCE,
                load_date=day,
                batch_id=f"SHUF-{n}",
                lines=lines[n * size : (n + 1) * size],
                ready_at=f"{day}T08:00:00Z",
            )
        )
    return out
