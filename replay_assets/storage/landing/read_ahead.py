"""Reading ahead: the next chunk of a delivery file is read, split and hashed in a worker thread
while the current one lands (DuckDB releases the GIL while it executes), so reading can overlap
DuckDB's work (not shown to pay on its own; see benchmarks/README.md). At most one chunk waits;
an error in the reader is raised in the consumer."""

from __future__ import annotations

import hashlib
import queue
import threading
from collections.abc import Generator, Iterator
from dataclasses import dataclass, field

from replay_assets.storage.landing.files import LineProblem


@dataclass(frozen=True)
class Chunk:
    first: int  # number of the first line
    lines: list[str]
    sha256: list[str]  # sha256 of each line's raw bytes
    problems: dict[int, LineProblem] = field(default_factory=dict)  # by line number: rejected on reading


class _Done:
    pass


def hashed_chunks(
    chunks: Generator[tuple[int, list[str], dict[int, LineProblem]], None, None],
) -> Iterator[Chunk]:
    """``chunks`` read one ahead in a thread, each line with the sha256 of its raw bytes (a line
    rejected on reading holds evidence text: its problem carries the raw bytes' hash)."""
    ready: queue.Queue[Chunk | BaseException | _Done] = queue.Queue(maxsize=1)
    stop = threading.Event()

    def read() -> None:
        try:
            for first, lines, problems in chunks:
                digests = [hashlib.sha256(s.encode()).hexdigest() for s in lines]
                for number, problem in problems.items():
                    digests[number - first] = problem.sha256
                ready.put(Chunk(first, lines, digests, problems))
                if stop.is_set():
                    chunks.close()
                    return
            ready.put(_Done())
        except BaseException as error:  # handed to the consumer, which raises it
            ready.put(error)

    worker = threading.Thread(target=read, name="replay-prefetch", daemon=True)
    worker.start()
    try:
        while not isinstance(item := ready.get(), _Done):
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        stop.set()
        try:  # unblock a reader waiting to hand over a chunk nobody will take
            ready.get_nowait()
        except queue.Empty:
            pass
        worker.join()
