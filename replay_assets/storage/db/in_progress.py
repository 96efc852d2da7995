"""What a writer is doing now, for readers that cannot open the warehouse while it writes:
``$HOME/in_progress.json`` (use case, load date or range, run id, start, pid), written when a
writing use case starts and removed when it ends. A file left by a killed process names a pid
that is gone and is ignored."""

from __future__ import annotations

import datetime as dt
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from replay_assets.storage.landing.deliveries import atomic_replace

FILE = "in_progress.json"


@contextmanager
def doing(home: Path, use_case: str, partition: str, run_id: str | None, now: dt.datetime) -> Iterator[None]:
    """Note the use case for the time of the block (an enclosing note comes back after it). Two
    processes may start at once (one then waits for the writer lock): each writes through its
    own temp file, and at the end touches the note only while it is still its own."""
    path = Path(home) / FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    outer = path.read_bytes() if path.exists() else None
    note = {"use_case": use_case, "partition": partition, "run_id": run_id, "since": now.isoformat()}
    _write(path, json.dumps({**note, "pid": os.getpid()}, sort_keys=True).encode())
    try:
        yield
    finally:
        if _pid(path) == os.getpid():
            if outer is None:
                path.unlink(missing_ok=True)
            else:
                _write(path, outer)


def _write(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "wb") as fh:
        fh.write(data)
    atomic_replace(tmp, path)


def _pid(path: Path) -> int | None:
    try:
        return int(json.loads(path.read_text(encoding="utf-8"))["pid"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def current(home: Path) -> dict[str, Any] | None:
    """The writer's note, if a live process left it."""
    try:
        note = json.loads((Path(home) / FILE).read_text(encoding="utf-8"))
        os.kill(int(note["pid"]), 0)
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return {k: v for k, v in note.items() if k != "pid"}
