"""Cost evidence: measuring a step's CPU and wall seconds, and the costs per delivered batch
(the records themselves are written and summed by ``written_once.py``)."""

from __future__ import annotations

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


def batch_costs(con: duckdb.DuckDBPyConnection) -> list[dict[str, object]]:
    """Cost evidence per delivered batch: landing measured, applying apportioned (``BATCH_COSTS``)."""
    cursor = con.execute(BATCH_COSTS)
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
