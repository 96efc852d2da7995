"""Seed 003 (failed daily load runbook lab) as deliveries and a timeline.

The seed's raw partitions are full snapshots of the order table (8 rows as of 2026-09-20, 9 as
of 2026-09-21). This source speaks CDC, so 2026-09-20 is delivered as the 8 rows as upserts and
2026-09-21 as the changes between the two snapshots (two new lines, two corrected amounts, one
deleted line): the state as of each load date equals the seed's snapshot.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from replay_assets.core.events import canonical_json
from replay_assets.demo.scenarios import fixture
from replay_assets.storage.landing.deliveries import write_delivery

SOURCE = "atlasmart"
BASELINE_DATE, CURRENT_DATE = "2026-09-20", "2026-09-21"
BASELINE_BATCH, CURRENT_BATCH = "ATLAS-20260920", "ATLAS-20260921"
# The seed's timeline (its dag.json runs): what the injected clock says at each step.
LEGACY_CERTIFIED_AT = fixture("seed003_corrupted_historical.json")["certified_at"]
BLOCKED_RUN_AT = "2026-09-21T08:05:00Z"  # RUN-20260921-0800-A: before ready_at
RETRIED_RUN_AT = "2026-09-21T08:12:00Z"  # RUN-20260921-0812-B: the transform fails once
REVERIFY_AT = "2026-09-21T08:45:00Z"
BACKFILL_AT = "2026-09-21T09:00:00Z"  # BF-20260920-0900-R1: the historical repair
REPLAY_AT = "2026-09-21T09:10:00Z"  # RUN-20260921-0910-C: the replay
# The transform's retry waits 6 minutes in the seed's timeline (run B certifies at 08:18).
RETRY_BACKOFF_SECONDS = 360


def ready_at(load_date: str) -> str:
    return str(fixture("seed003_source_manifests.json")["manifests"][load_date]["ready_at"])


def write_config(home: Path) -> None:
    """The home's settings: the seed's SLO policy, the expected time of a load date (08:00, the
    seed's scheduled_at) and the timeline's retry backoff."""
    policy = dict(fixture("seed003_slo_policy.json")["slos"])
    policy["expected_time"] = "08:00"
    home.mkdir(parents=True, exist_ok=True)
    config = {"slo": policy, "retry_backoff_seconds": RETRY_BACKOFF_SECONDS}
    (home / "replay-assets.json").write_text(json.dumps(config, indent=2), encoding="utf-8")


def _image(row: dict[str, Any]) -> dict[str, Any]:
    return {
        "order_id": row["order_id"],
        "line_no": row["line_no"],
        "store_id": "main",
        "customer_id": row["customer_id"],
        "product_id": row["product_id"],
        "business_date": row["event_ts"][:10],
        "quantity": row["quantity"],
        "amount_minor": row["extended_amount"],
        "cost_minor": row["extended_cost"],
        "status": "active" if row["status"] == "paid" else "cancelled",
    }


def _event(seq: int, op: str, row: dict[str, Any]) -> str:
    return canonical_json(
        {
            "event_id": f"atlas-{seq}",
            "source_seq": seq,
            "schema_version": 1,
            "entity": "order_line",
            "op": op,
            "key": {"order_id": row["order_id"], "line_no": row["line_no"]},
            "event_time": row["event_ts"],
            "after": _image(row) if op == "upsert" else None,
        }
    )


def _rows(name: str) -> dict[tuple[str, int], dict[str, Any]]:
    return {(r["order_id"], r["line_no"]): r for r in fixture(name)["rows"]}


def baseline_lines() -> list[str]:
    rows = _rows("seed003_baseline_rows.json")
    return [_event(193 + n, "upsert", rows[k]) for n, k in enumerate(sorted(rows))]


def current_lines() -> list[str]:
    """The changes from the 2026-09-20 snapshot to the 2026-09-21 one, in key order."""
    before, after = _rows("seed003_baseline_rows.json"), _rows("seed003_current_rows.json")
    changes = [(k, "upsert", after[k]) for k in sorted(after) if before.get(k) != after[k]]
    changes += [(k, "delete", before[k]) for k in sorted(before) if k not in after]
    changes.sort(key=lambda change: change[0])
    return [_event(201 + n, op, row) for n, (_, op, row) in enumerate(changes)]


def deliver_baseline(landing: Path) -> Path:
    return write_delivery(
        landing,
        SOURCE,
        load_date=BASELINE_DATE,
        batch_id=BASELINE_BATCH,
        lines=baseline_lines(),
        ready_at=ready_at(BASELINE_DATE),
        seq_range=(1, 200),
    )


def deliver_current(landing: Path) -> Path:
    return write_delivery(
        landing,
        SOURCE,
        load_date=CURRENT_DATE,
        batch_id=CURRENT_BATCH,
        lines=current_lines(),
        ready_at=ready_at(CURRENT_DATE),
        seq_range=(201, 206),
    )


def corrupt_legacy_publication(con: Any) -> None:
    """The seed's legacy publication of 2026-09-20: one cost recorded wrong (435 / 255 instead of
    425 / 265) by a run outside this system. Applied to the stored snapshot record."""
    legacy = fixture("seed003_corrupted_historical.json")
    broken = legacy["broken_controls"]
    con.execute(
        """UPDATE snapshots SET cost_minor = ?, gross_profit_minor = ? WHERE load_date = ?""",
        [broken[4], broken[5], legacy["partition"]],
    )
    con.execute(
        """UPDATE publications SET run_id = ? WHERE asset = 'current_orders' AND partition_key = ?""",
        [legacy["run_id"], legacy["partition"]],
    )
