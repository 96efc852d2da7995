"""Worker processes that prepare chunks of lines (``prepare.py``), one per core.

Each worker is ``python -m replay_assets.storage.landing.workers``: a fresh interpreter that
imports only the preparing code (polars, and DuckDB for an in-memory database;
not Dagster or the caller's ``__main__``, which ``multiprocessing``'s spawn and forkserver
would import again: the CLI's entry script imports Dagster, seconds per worker). Jobs and
results are pickled frames on the worker's stdin and stdout; results are small (the data goes
to Parquet files), so a worker never blocks on a full pipe while its caller writes the next job.
The workers live as long as the process that started them: a worker whose stdin closes (its
parent exited or was killed) exits.
"""

from __future__ import annotations

import atexit
import gc
import os
import pickle
import struct
import subprocess
import sys
from collections.abc import Callable
from typing import IO, Any

_HEADER = struct.Struct("<Q")


class WorkerFailed(RuntimeError):
    """A worker raised or died; the message names the failure, never a line's content."""


def _write(stream: IO[bytes], value: object) -> None:
    data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(_HEADER.pack(len(data)))
    stream.write(data)
    stream.flush()


def _read(stream: IO[bytes]) -> Any:
    header = stream.read(_HEADER.size)
    if len(header) < _HEADER.size:
        raise EOFError
    (size,) = _HEADER.unpack(header)
    data = stream.read(size)
    if len(data) < size:
        raise EOFError
    return pickle.loads(data)  # frames of our own parent or child, over private pipes only


class _Worker:
    def __init__(self) -> None:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
        self.process = subprocess.Popen(
            [sys.executable, "-m", __name__],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
        )

    def submit(self, function: Callable[[Any], Any], argument: object) -> None:
        assert self.process.stdin is not None
        try:
            _write(self.process.stdin, (function, argument))
        except (BrokenPipeError, OSError) as error:
            raise WorkerFailed(f"a landing worker is gone ({error.__class__.__name__})") from None

    def result(self) -> Any:
        assert self.process.stdout is not None
        try:
            ok, value = _read(self.process.stdout)
        except EOFError:
            raise WorkerFailed(f"a landing worker died (exit {self.process.poll()})") from None
        if not ok:
            raise WorkerFailed(f"a landing worker failed: {value}")
        return value

    def alive(self) -> bool:
        return self.process.poll() is None

    def stop(self) -> None:
        """Ask the worker to leave: it exits when its job pipe ends."""
        if self.process.stdin is not None:
            self.process.stdin.close()

    def close(self) -> None:
        self.stop()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()


class Pool:
    """Up to ``size`` workers, started on first use. ``submit`` hands one argument to each of as
    many workers; ``Batch.results`` waits for them, in order. One caller at a time (landing holds
    the warehouse's writer lock); a batch must be collected before the next is submitted to the
    same worker, which the pipe's back-pressure enforces: ``submit`` returns once each worker has
    taken its job, so a caller can work while the workers do."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.workers: list[_Worker] = []

    def submit(self, function: Callable[[Any], Any], arguments: list[Any]) -> Batch:
        if len(arguments) > self.size:
            raise ValueError(f"{len(arguments)} jobs for {self.size} workers")
        self.workers = [w for w in self.workers if w.alive()]
        while len(self.workers) < len(arguments):
            self.workers.append(_Worker())
        chosen = self.workers[: len(arguments)]
        try:
            for worker, argument in zip(chosen, arguments, strict=True):
                worker.submit(function, argument)
        except WorkerFailed:
            self.close()
            raise
        return Batch(self, chosen)

    def close(self) -> None:
        for worker in self.workers:  # every worker winds down at once, then each is awaited
            worker.stop()
        for worker in self.workers:
            worker.close()
        self.workers = []


class Batch:
    def __init__(self, pool: Pool, workers: list[_Worker]) -> None:
        self.pool = pool
        self.workers = workers

    def results(self) -> list[Any]:
        try:
            return [worker.result() for worker in self.workers]
        except WorkerFailed:
            self.pool.close()  # a worker left mid-job is not reused
            raise


def cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


_POOL = Pool(cores())
atexit.register(_POOL.close)


def pool() -> Pool:
    return _POOL


def _serve() -> None:
    """The worker's loop: read a job, run it, write ``(ok, result or error text)``."""
    jobs, results = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # nothing may print into the result stream
    gc.disable()  # a job allocates millions of acyclic objects; collected once per job below
    while True:
        try:
            function, argument = _read(jobs)
        except EOFError:
            gc.freeze()  # the parent waits for this exit: skip the final collections (cli.entry)
            return
        try:
            outcome: tuple[bool, object] = (True, function(argument))
        except Exception as error:  # reported to the parent, which raises it
            outcome = (False, type(error).__name__)  # the message may quote a value
        gc.collect()
        _write(results, outcome)


if __name__ == "__main__":
    _serve()
