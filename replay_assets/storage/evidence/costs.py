"""Cost evidence: per batch and per step, the events, bytes read, CPU and wall seconds,
rows written and the temporary storage failed candidates keep."""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Iterator
from contextlib import contextmanager

import duckdb

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


# Cost per delivered batch (seed 002's "per-page cost"). Landing is measured per batch.
# Applying is one set-based fold per load date, so its CPU and wall seconds exist per load date
# only: each batch is given its share of the newest application of its date in proportion to its
# source events (``apply_basis`` says so). Rows written are the batch's own: two per landed event
# (raw receipt, staged event) and one history row per accepted event.
BATCH_COSTS = """
WITH landing AS (
    SELECT batch_id, sum(bytes_read) AS bytes_read, sum(cpu_seconds) AS cpu, sum(wall_seconds) AS wall,
           sum(rows_written) AS rows_written
    FROM costs WHERE step = 'land' AND batch_id IS NOT NULL GROUP BY 1
), applying AS (
    SELECT partition_key AS load_date, arg_max(cpu_seconds, recorded_at) AS cpu,
           arg_max(wall_seconds, recorded_at) AS wall
    FROM costs WHERE step = 'apply' GROUP BY 1
), batches AS (
    SELECT load_date, batch_id, source_events, accepted, rejected, skipped_duplicate, skipped_stale, status,
           source_events / nullif(sum(source_events) FILTER (WHERE status <> 'SKIPPED')
               OVER (PARTITION BY load_date), 0) AS share
    FROM reconciliation
)
SELECT b.load_date, b.batch_id, b.status, b.source_events, b.accepted, b.rejected, b.skipped_duplicate,
       b.skipped_stale, coalesce(l.bytes_read, 0) AS bytes_read,
       round(coalesce(l.cpu, 0), 6) AS land_cpu_seconds, round(coalesce(l.wall, 0), 6) AS land_wall_seconds,
       round(CASE WHEN b.status <> 'SKIPPED' THEN a.cpu * b.share END, 6) AS apply_cpu_seconds,
       round(CASE WHEN b.status <> 'SKIPPED' THEN a.wall * b.share END, 6) AS apply_wall_seconds,
       coalesce(l.rows_written, 0) + b.accepted AS rows_written,
       'share of its load date by source events' AS apply_basis
FROM batches b LEFT JOIN landing l USING (batch_id) LEFT JOIN applying a USING (load_date)
ORDER BY b.load_date, b.batch_id"""


def batch_costs(con: duckdb.DuckDBPyConnection) -> list[dict[str, object]]:
    """Cost evidence per delivered batch: landing measured, applying apportioned (``BATCH_COSTS``)."""
    cursor = con.execute(BATCH_COSTS)
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
