"""Preparing a chunk of lines on every core: a chunk is cut into one slice per worker process
(``workers.py``); a chunk too small to repay a worker's round trip is prepared in-process."""

from __future__ import annotations

import dataclasses
import gc
import threading
from dataclasses import dataclass
from pathlib import Path

from replay_assets.core.events import ValidationContext
from replay_assets.storage.home.segment_files import Written
from replay_assets.storage.landing import workers
from replay_assets.storage.landing.area import RawChunk
from replay_assets.storage.landing.prepare import Prepared, job, prepare

POOL_MIN_LINES = 10_000  # below this a chunk is prepared in the landing process
SLICE_LINES = 5_000  # a worker's slice is at least this long
CHUNK_LINES = 64_000  # small enough that the workers prepare a chunk while the one before lands


@dataclass
class Started:
    """A chunk being prepared; ``results`` waits for it."""

    batch: workers.Batch | None
    done: list[Prepared]
    ahead: bool = False  # prepared earlier, by the workers or another thread (``prefetch.py``)

    def results(self) -> list[Prepared]:
        """The prepared pieces; ``cpu_seconds`` is the workers' (0 when prepared in-process,
        where the landing process's own CPU time counts it already)."""
        if self.batch is None:
            return self.done if self.ahead else [dataclasses.replace(p, cpu_seconds=0.0) for p in self.done]
        return self.batch.results()


# the thread preparing the next load date ahead (``prefetch.py``): the pool serves one caller at a
# time, so any other caller waits for it
_RESERVED: list[threading.Thread] = []


def reserve(thread: threading.Thread) -> None:
    _RESERVED[:] = [thread]


def start(chunk: RawChunk, ctx: ValidationContext, folder: Path) -> Started:
    for thread in _RESERVED:
        if thread is not threading.current_thread():
            thread.join()
    first, lines, problems = chunk
    pool = workers.pool()
    parts = min(pool.size, -(-len(lines) // SLICE_LINES)) if len(lines) >= POOL_MIN_LINES else 1
    step = max(1, -(-len(lines) // parts))
    jobs = []
    for i, at in enumerate(range(0, len(lines), step)):
        out = folder / str(i)
        out.mkdir(parents=True)
        low, high = first + at, first + at + step
        mine = {n: p for n, p in problems.items() if low <= n < high}
        jobs.append(job(low, lines[at : at + step], mine, ctx=ctx, folder=str(out)))
    if len(jobs) < 2:
        gc.disable()  # a chunk allocates many acyclic objects: no collection needed while it is prepared
        try:
            return Started(None, [prepare(j) for j in jobs])
        finally:
            gc.enable()
    return Started(pool.submit(prepare, jobs), [])


def files(prepared: list[Prepared]) -> tuple[list[Written], list[Written]]:
    """The prepared chunk's lines and staged-event files."""
    return [p.lines for p in prepared], [p.staged for p in prepared]
