"""Fault injection. Named fail points for crash tests: the process kills itself with SIGKILL there
(no cleanup, no exception handlers, exactly like a power cut for everything not yet committed), or
stops itself with SIGSTOP so that a test sees it stopped and kills its whole process group from
outside at that known instant. A fail-once switch for retry tests: a step raises one transient
error, then passes."""

from __future__ import annotations

import collections
import os
import signal
from pathlib import Path

STOP = "stop:"
_hits: collections.Counter[str] = collections.Counter()  # per process: a `run` executes many steps


def hit(configured: str | None, name: str) -> None:
    """``configured`` is ``[stop:]<point>[#<n>]``: SIGKILL, or SIGSTOP with ``stop:``, at the n-th
    time this process reaches the point (the first when ``#<n>`` is absent)."""
    if not configured:
        return
    _hits[name] += 1
    point, _, nth = configured.removeprefix(STOP).partition("#")
    if point == name and _hits[name] == int(nth or 1):
        os.kill(os.getpid(), signal.SIGSTOP if configured.startswith(STOP) else signal.SIGKILL)


class TransientFault(RuntimeError):
    """An injected transient failure (``REPLAY_ASSETS_FAIL_ONCE``): the retry policy retries it."""


def fail_once(configured: str | None, home: Path, step: str, partition_key: str, point: str) -> None:
    """Raise once per (step, partition, point) when ``configured`` is ``step`` or ``step:point``
    (point defaults to ``before``); a marker under ``$HOME/faults`` makes the next attempt pass."""
    if not configured:
        return
    want_step, _, want_point = configured.partition(":")
    if want_step != step or (want_point or "before") != point:
        return
    marker = home / "faults" / f"{step}-{partition_key}-{point}.fired"
    if marker.exists():
        return
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.touch()
    raise TransientFault(f"injected transient fault in {step} ({point}) for {partition_key}")
