"""Consecutive load dates grouped into ranges (a restatement's publishing, the sensors' cursors)."""

from __future__ import annotations

import datetime as dt


def contiguous_ranges(dates: list[str]) -> list[tuple[str, str]]:
    """Group sorted ISO dates into runs of consecutive days."""
    ranges: list[tuple[str, str]] = []
    for day in dates:
        if ranges and dt.date.fromisoformat(ranges[-1][1]) + dt.timedelta(days=1) == dt.date.fromisoformat(
            day
        ):
            ranges[-1] = (ranges[-1][0], day)
        else:
            ranges.append((day, day))
    return ranges
