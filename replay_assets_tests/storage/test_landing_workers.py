"""Landing through worker processes gives the warehouse exactly what landing in-process gives:
every line numbered as in the file across slices, each through the tier that certifies it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from replay_assets.storage.landing import parallel, workers
from replay_assets.usecases.land import land
from replay_assets_tests.storage.test_bad_input import D1, deliver, event, make_pipeline, rows

TABLES = {
    "raw_receipts": "SELECT * EXCLUDE (landed_at) FROM raw_receipts",
    "staged_events": "SELECT * FROM staged_events",
    "rejected_events": "SELECT * FROM rejected_events",
}


def lines() -> list[str]:
    """Compact and sorted renderings (the grammar), spaced ones (DuckDB's JSON path), lines the
    oracle rejects, blank lines and duplicates, interleaved so every slice gets each kind."""
    out = []
    for i in range(1, 121):
        body: dict[str, Any] = json.loads(event(i, f"o{i % 17}", amount_minor=i))
        kind = i % 6
        if kind == 0:
            out.append(json.dumps(body))
        elif kind == 1:
            out.append(json.dumps(body, sort_keys=True, separators=(",", ":")))
        elif kind == 2:
            out.append(json.dumps({**body, "event_id": "bad id"}, separators=(",", ":")))
        elif kind == 3:
            out.append("")
        else:
            out.append(json.dumps(body, separators=(",", ":")))
    return out + out[:10]  # a redelivered tail: the same event ids again


def landed(home: Path, pool_min_lines: int) -> dict[str, list[tuple[Any, ...]]]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(parallel, "POOL_MIN_LINES", pool_min_lines)
        p = make_pipeline(home)
        deliver(p, D1, "B1", lines())
        land(p, D1)
    return {name: sorted(rows(p, sql), key=repr) for name, sql in TABLES.items()}


def test_worker_processes_land_what_the_landing_process_lands(tmp_path: Path) -> None:
    inline = landed(tmp_path / "inline", pool_min_lines=10**9)
    split = landed(tmp_path / "workers", pool_min_lines=20)  # 130 lines: one slice per worker
    assert [w for w in workers.pool().workers if w.alive()], "no worker process was used"
    assert split == inline
    assert len(inline["raw_receipts"]) == 130 - 22  # blank lines are not receipts
    assert len(inline["rejected_events"]) == 22  # the bad ids, redelivered ones included
    assert len(inline["staged_events"]) == 130 - 22 - 22
