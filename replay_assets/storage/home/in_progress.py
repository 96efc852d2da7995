"""What a writer is doing now, for readers that cannot open the warehouse while it writes:
``$HOME/in_progress.json`` (use case, load date or range, run id, start, and its owner), written
when a writing use case starts and removed when it ends.

The owner is the writing process, named by its pid and, where ``/proc`` tells it (Linux), the
boot and the tick the process started at: a pid alone is reused after its process is gone, so a
note left by a killed writer would look alive whenever its pid came back. A note whose owner is
gone is dropped: readers ignore it and the next writer replaces it and never writes it back.
Where ``/proc`` is absent the pid alone decides. The note is read as one of the home's own files
(``home_files``): a writer refuses one that is not a regular file before it starts; a reader,
for which the note is only a hint, ignores it."""

from __future__ import annotations

import datetime as dt
import json
import os
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from replay_assets.core.errors import ReplayError
from replay_assets.storage.home.home_files import read_own_file, write_own_file

FILE = "in_progress.json"
OWNER_KEYS = ("pid", "owner", "note_id")
_notes = threading.local()  # this thread's open notes, innermost last (a use case inside another)


def require_readable(home: Path) -> None:
    """Refuse (REPLAY_HOME_FILE_REFUSED) a note that is not a bounded regular file: a writing
    command checks it before it does anything, so it fails with the reason, not inside a run."""
    read_own_file(home, FILE)


@contextmanager
def doing(home: Path, use_case: str, partition: str, run_id: str | None, now: dt.datetime) -> Iterator[None]:
    """Note the use case for the time of the block; this writer's enclosing note comes back
    after it. Two processes may start at once (one then waits for the writer lock): each
    writes its own note whole, and at the end touches the file only while it holds its note,
    so neither removes the other's nor writes back a note it does not own."""
    home = Path(home)
    require_readable(home)
    pid = os.getpid()
    note: dict[str, Any] = {
        "use_case": use_case,
        "partition": partition,
        "run_id": run_id,
        "since": now.isoformat(),
        "pid": pid,
        "owner": _owner(pid),
        "note_id": uuid.uuid4().hex,
    }
    stack: list[dict[str, Any]] = _notes.__dict__.setdefault("stack", [])
    home.mkdir(parents=True, exist_ok=True)
    _write(home, note)
    stack.append(note)
    try:
        yield
    finally:
        stack.remove(note)
        found = _read(home)
        if found is not None and found.get("note_id") == note["note_id"]:
            if stack:
                _write(home, stack[-1])
            else:
                (home / FILE).unlink(missing_ok=True)


def note_left(home: Path) -> bool:
    """Whether anything is under the note's name, whatever it is and whoever left it: a writer
    runs now, or one was killed before it removed its note."""
    return os.path.lexists(Path(home) / FILE)


def current(home: Path) -> dict[str, Any] | None:
    """The writer's note, if its owner is alive (without the owner's identity)."""
    note = _read(Path(home))
    if note is None or not _alive(note):
        return None
    return {k: v for k, v in note.items() if k not in OWNER_KEYS}


def _read(home: Path) -> dict[str, Any] | None:
    try:
        data = read_own_file(home, FILE)
        note = json.loads(data) if data is not None else None
    except (ReplayError, ValueError, RecursionError):  # a hint only: an unusable one is no note
        return None
    return note if isinstance(note, dict) else None


def _write(home: Path, note: dict[str, Any]) -> None:
    write_own_file(home, FILE, json.dumps(note, sort_keys=True).encode())


def _alive(note: dict[str, Any]) -> bool:
    pid = note.get("pid")
    if type(pid) is not int or not 0 < pid < 2**31:  # 0 and negatives name process groups
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # another user's process: it exists
    now = _owner(pid)
    return now is None or now == note.get("owner")


def _owner(pid: int) -> str | None:
    """The boot and the start tick of process ``pid`` (fields after the command name in
    ``/proc/PID/stat``: the start time is the 22nd field); None where ``/proc`` cannot say."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
        boot = Path("/proc/sys/kernel/random/boot_id").read_text(encoding="ascii").strip()
    except OSError:
        return None
    fields = stat[stat.rfind(")") + 2 :].split()
    return f"{boot}:{fields[19]}" if len(fields) > 19 else None
