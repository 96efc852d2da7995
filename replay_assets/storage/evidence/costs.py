"""Cost evidence: per batch and per step, the events, bytes read, CPU and wall seconds,
rows written and the temporary storage failed candidates keep."""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Iterator
from contextlib import contextmanager

import duckdb

from replay_assets.storage.rules.evidence import BATCH_COSTS
from replay_assets.storage.rules.evidence import Cost as Cost


@contextmanager
def measure() -> Iterator[Cost]:
    """CPU and wall seconds of the body (process CPU: the pipeline runs steps in-process)."""
    cost = Cost()
    cpu, wall = time.process_time(), time.perf_counter()
    try:
        yield cost
    finally:
        cost.cpu_seconds = time.process_time() - cpu
        cost.wall_seconds = time.perf_counter() - wall


def record_cost(
    con: duckdb.DuckDBPyConnection,
    *,
    run_id: str | None,
    step: str,
    partition_key: str,
    cost: Cost,
    now: dt.datetime,
    batch_id: str | None = None,
    events: int = 0,
    bytes_read: int = 0,
    rows_written: int = 0,
    candidate_bytes: int = 0,
) -> None:
    con.execute(
        "INSERT INTO costs ("
        "run_id, step, partition_key, batch_id, events, bytes_read, cpu_seconds, wall_seconds, "
        "rows_written, candidate_bytes, recorded_at"
        ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [
            run_id,
            step,
            partition_key,
            batch_id,
            events,
            bytes_read,
            round(cost.cpu_seconds, 6),
            round(cost.wall_seconds, 6),
            rows_written,
            candidate_bytes,
            now,
        ],
    )


def run_costs(con: duckdb.DuckDBPyConnection, run_id: str, step: str) -> dict[str, float]:
    """Totals of one step of one run."""
    row = con.execute(
        """SELECT count(*), coalesce(sum(events), 0), coalesce(sum(bytes_read), 0),
            round(coalesce(sum(cpu_seconds), 0), 3), round(coalesce(sum(wall_seconds), 0), 3),
            coalesce(sum(rows_written), 0), coalesce(sum(candidate_bytes), 0)
            FROM costs WHERE run_id = ? AND step = ?""",
        [run_id, step],
    ).fetchall()[0]
    names = (
        "cost_records",
        "events",
        "bytes_read",
        "cpu_seconds",
        "wall_seconds",
        "rows_written",
        "candidate_bytes",
    )
    return dict(zip(names, (float(v) for v in row), strict=True))


def batch_costs(con: duckdb.DuckDBPyConnection) -> list[dict[str, object]]:
    """Cost evidence per delivered batch: landing measured, applying apportioned (``BATCH_COSTS``)."""
    cursor = con.execute(BATCH_COSTS)
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
