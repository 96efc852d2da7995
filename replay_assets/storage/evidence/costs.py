"""Cost evidence: measuring a step's CPU and wall seconds (the records are written and summed by
``written_once.py``, and reported per delivered batch by ``publish/reports.py``)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

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
