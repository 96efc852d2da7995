"""The clock every use case reads. Real by default; with ``REPLAY_ASSETS_NOW`` a virtual clock
that starts at that instant and moves only when something waits on it (a retry's backoff), so
tests and the demo replay a timeline (seed 003: retried after 6 minutes) without sleeping.

The virtual time is shared by every process of a home through ``$HOME/clock.json``; setting
``REPLAY_ASSETS_NOW`` to another instant starts it again from there.
"""

from __future__ import annotations

import datetime as dt
import fcntl
import json
import os
import time
from pathlib import Path

STATE_FILE = "clock.json"


def real_now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


class VirtualClock:
    def __init__(self, home: Path, start: dt.datetime) -> None:
        self.path = home / STATE_FILE
        self.start = start

    def _elapsed(self) -> float:
        try:
            state = json.loads(self.path.read_text())
        except (OSError, ValueError):
            return 0.0
        return float(state["elapsed_seconds"]) if state.get("start") == self.start.isoformat() else 0.0

    def now(self) -> dt.datetime:
        return self.start + dt.timedelta(seconds=self._elapsed())

    def sleep(self, seconds: float) -> None:
        """Advance the virtual time (serialised across processes by a lock on the state file)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path.with_suffix(".lock"), os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            state = {"start": self.start.isoformat(), "elapsed_seconds": self._elapsed() + seconds}
            tmp = self.path.with_name(f".{self.path.name}.tmp")
            tmp.write_text(json.dumps(state))
            os.replace(tmp, self.path)
        finally:
            os.close(fd)


def sleep_real(seconds: float) -> None:
    time.sleep(seconds)  # a retry's backoff on the real clock
