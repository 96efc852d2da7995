"""The clock every use case reads. Real by default; with ``REPLAY_ASSETS_NOW`` a virtual clock
that starts at that instant and moves only when something waits on it (a retry's backoff), so
tests and the demo replay a timeline (seed 003: retried after 6 minutes) without sleeping.

The virtual time is shared by every process of a home through ``$HOME/clock.json``; setting
``REPLAY_ASSETS_NOW`` to another instant starts it again from there. It is one of the home's own
files (``home_files``): anything but a bounded regular file there is refused, never waited on.
"""

from __future__ import annotations

import datetime as dt
import fcntl
import json
import os
import time
from pathlib import Path

from replay_assets.storage.home.home_files import open_lock, read_own_file, write_own_file

STATE_FILE = "clock.json"
MAX_ELAPSED_SECONDS = 100 * 365 * 86400.0  # beyond, a damaged clock (not a timeline) to start again


def real_now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


class VirtualClock:
    def __init__(self, home: Path, start: dt.datetime) -> None:
        self.home = home
        self.path = home / STATE_FILE
        self.start = start

    def _elapsed(self) -> float:
        data = read_own_file(self.home, STATE_FILE)
        try:
            state = json.loads(data) if data is not None else {}
            same = isinstance(state, dict) and state.get("start") == self.start.isoformat()
            elapsed = float(state["elapsed_seconds"]) if same else 0.0
            return elapsed if 0 <= elapsed < MAX_ELAPSED_SECONDS else 0.0
        except (ValueError, KeyError, TypeError, RecursionError):  # a damaged clock starts again
            return 0.0

    def now(self) -> dt.datetime:
        return self.start + dt.timedelta(seconds=self._elapsed())

    def sleep(self, seconds: float) -> None:
        """Advance the virtual time (serialised across processes by a lock on the state file)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = open_lock(self.path.parent, self.path.with_suffix(".lock").name)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            state = {"start": self.start.isoformat(), "elapsed_seconds": self._elapsed() + seconds}
            write_own_file(self.home, STATE_FILE, json.dumps(state).encode())
        finally:
            os.close(fd)


def sleep_real(seconds: float) -> None:
    time.sleep(seconds)  # a retry's backoff on the real clock
