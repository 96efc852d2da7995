"""The replay horizon: which applied load dates keep their raw input, staged events,
event-id registry rows and superseded history, and which are pruned.

The horizon is the newest ``retention_load_dates`` applied load dates. Every applied date before
it is pruned, oldest first, and never one after the published pointer: pruning a date keeps the
state as of that date and every later one exact, but not the state as of earlier dates, and
consumers read the state as of the pointer. A load date at or before the last pruned one is
behind the horizon: re-applying it, landing a late batch into it or reading the state as of it is
refused with the reason, since the input it needs is gone.
"""

from __future__ import annotations

from collections.abc import Iterable

DEFAULT_RETENTION_LOAD_DATES = 35


def prunable(applied: Iterable[str], keep: int, pruned_through: str, pointer: str) -> list[str]:
    """The applied load dates to prune now, oldest first: those before the newest ``keep``, after
    the last pruned one (``pruned_through``, "" for none), and not after the published pointer
    (nothing is pruned before the first certification)."""
    if keep < 1:
        raise ValueError("retention_load_dates is at least 1")
    ordered = sorted(set(applied))
    behind = ordered[: max(len(ordered) - keep, 0)]
    return [day for day in behind if pruned_through < day <= pointer]


def behind_horizon(day: str, pruned_through: str) -> bool:
    return bool(pruned_through) and day <= pruned_through


def refusal(day: str, pruned_through: str, what: str) -> str | None:
    """Why ``what`` (a re-application, a late batch, an as-of read) of load date ``day`` is
    refused, or None when the date is inside the horizon."""
    if not behind_horizon(day, pruned_through):
        return None
    return (
        f"{what} of load date {day} reaches behind the retention horizon: the raw input, staged "
        f"events and superseded history of load dates up to {pruned_through} were pruned "
        "(retention_load_dates)"
    )
