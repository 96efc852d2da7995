"""Preparing the next load date's files while the current one applies (``replay-assets run``).

Applying a load date keeps about one core of two busy (DuckDB's single-threaded phases, the
journal, Dagster), while preparing a file's lines (``prepare.py``: the grammar, the hashes,
Parquet) is the CPU-bound half of landing. When ``replay-assets run`` lands a load date and the
plan shows the next one ready, a background thread reads that date's files and has the workers
prepare them; landing the next date then takes the prepared chunks instead of reading the file
again.

What makes this safe is what makes landing safe: the thread reads each file through
:meth:`DeliveryFile.chunks`, which verifies the bytes it read against the manifest (sha256 and
event count) after the last chunk. A file the thread read to the end without a mismatch is
therefore *a reading of the declared file*: landing its prepared chunks lands exactly the bytes
the manifest names, as reading the file again would. Anything else — a mismatch, a dead worker,
another validation context (the business-date window moves with the clock), another file —
discards the prefetched file, and landing reads it itself and decides as it always did. Nothing
is written but Parquet files under the folder the runner names (``$HOME/.prefetch``), removed
when the next prefetch starts or the run ends, and by the next run of the home after a kill.
One caller uses the worker pool at a time: a landing that starts while the thread runs waits
for it (``parallel.start``).
"""

from __future__ import annotations

import shutil
import tempfile
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from replay_assets.core.events import ValidationContext
from replay_assets.core.manifest import ManifestFile
from replay_assets.storage.landing import parallel
from replay_assets.storage.landing.area import DeliveryFile, RawChunk

# A chunk prepared ahead, as landing takes it: the chunk without its lines (its first line number
# and the problems found while reading it) and the workers' finished pieces (their folders hold
# the Parquet files).
Ready = tuple[RawChunk, parallel.Started]


@dataclass
class _File:
    declared: ManifestFile
    path: Path
    ctx: ValidationContext
    chunks: list[Ready] = field(default_factory=list)
    verified: bool = False  # read to the end, and the bytes matched the manifest


class Prefetch:
    """The files of one load date, prepared by a background thread."""

    def __init__(self, files: Sequence[tuple[DeliveryFile, ValidationContext]], under: Path) -> None:
        under.mkdir(parents=True, exist_ok=True)
        self.folder = Path(tempfile.mkdtemp(prefix="ahead-", dir=under))
        self.files = [_File(f.declared, f.path, ctx) for f, ctx in files]
        self.thread = threading.Thread(target=self._prepare, name="replay-prefetch", daemon=True)
        self.stop = threading.Event()  # discarded: stop at the next chunk

    def _prepare(self) -> None:
        for number, f in enumerate(self.files):
            try:
                read = DeliveryFile(f.declared, f.path).chunks(parallel.CHUNK_LINES, f.ctx.max_line_bytes)
                for part, chunk in enumerate(read):
                    if self.stop.is_set():
                        f.chunks = []
                        return
                    started = parallel.start(chunk, f.ctx, self.folder / f"{number}.{part}")
                    done = parallel.Started(None, started.results(), ahead=True)
                    f.chunks.append(((chunk[0], [], chunk[2]), done))
                f.verified = True
            except Exception:  # any failure only means that landing reads the file itself
                f.chunks = []

    def take(self, f: DeliveryFile, ctx: ValidationContext) -> list[Ready] | None:
        """The prepared chunks of ``f`` read under ``ctx``, or None. Waits for the thread."""
        self.thread.join()
        for mine in self.files:
            if mine.verified and (mine.declared, mine.path, mine.ctx) == (f.declared, f.path, ctx):
                mine.verified = False  # taken once
                _TAKEN[0] += 1
                return mine.chunks
        return None

    def discard(self) -> None:
        self.stop.set()
        self.thread.join()
        shutil.rmtree(self.folder, ignore_errors=True)


_FOLDER: list[Path] = []  # while enabled: where prepared files go
_AHEAD: list[Prefetch] = []  # at most one: the next load date's
_TAKEN = [0]  # files landed from their prepared chunks since prefetching was enabled


@contextmanager
def enabled(folder: Path) -> Iterator[None]:
    """Prefetching for the body (the headless runner, whose runs share this process), preparing
    into ``folder``; what it holds when the body starts was left by a run this process's lock
    excludes (one killed), and is removed, as is what is left when the body ends."""
    shutil.rmtree(folder, ignore_errors=True)
    _FOLDER[:] = [folder]
    _TAKEN[0] = 0
    try:
        yield
    finally:
        _FOLDER.clear()
        settle()
        shutil.rmtree(folder, ignore_errors=True)


def is_enabled() -> bool:
    return bool(_FOLDER)


def start(files: Sequence[tuple[DeliveryFile, ValidationContext]]) -> None:
    """Prepare ``files`` in the background, if prefetching is enabled (replacing any earlier)."""
    settle()
    if not _FOLDER or not files:
        return
    try:
        ahead = Prefetch(files, under=_FOLDER[0])
    except OSError:  # no folder to prepare into: landing reads the files itself, as always
        return
    _AHEAD.append(ahead)
    parallel.reserve(ahead.thread)
    ahead.thread.start()


def take(f: DeliveryFile, ctx: ValidationContext) -> list[Ready] | None:
    """The chunks of ``f`` prepared ahead under ``ctx``, if any (their folder stays until
    ``settle``)."""
    return _AHEAD[0].take(f, ctx) if _AHEAD else None


def settle() -> None:
    """Wait for the background preparation and remove what it prepared."""
    while _AHEAD:
        _AHEAD.pop().discard()


def ready_files() -> int:
    """Files prepared ahead and not taken yet (waits for the preparation)."""
    for ahead in _AHEAD:
        ahead.thread.join()
    return sum(f.verified for ahead in _AHEAD for f in ahead.files)


def taken_files() -> int:
    """Files landed from their prepared chunks since prefetching was enabled."""
    return _TAKEN[0]


def folders() -> list[Path]:
    """The folders holding what was prepared ahead."""
    return [ahead.folder for ahead in _AHEAD]
