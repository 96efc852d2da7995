"""What the manifest sensor's cursor remembers between ticks. Pure.

A load date is *settled* when it is applied from exactly the manifests the landing area holds,
every one of them landed, nothing late, superseding or unreadable among them, and it is not the
newest delivered date. A settled date plans as APPLIED whatever else arrives, so a tick need not
read its manifests again. The cursor keeps the settled dates and, per month, a digest of their
manifests' file facts and applied identities: a month whose digest no longer matches (a late,
replaced or removed manifest, a date applied again) is read again whole. The cursor stays a few
hundred bytes a year of history, because Dagster stores it with every tick.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from replay_assets.core.events import canonical_json, sha256_text
from replay_assets.core.plan import DatePlan, Delivery, days
from replay_assets.core.status import DateStatus

CURSOR_VERSION = 1


@dataclass(frozen=True)
class Listed:
    """One manifest entry of the landing area, as a listing and ``lstat`` tell it."""

    path: str  # relative to the landing area: <source>/<load_date>/<name>
    source: str
    load_date: str  # as its folder names it ("" when the path names none)
    fingerprint: str


@dataclass(frozen=True)
class SettledCursor:
    config: str = ""  # what the settled verdicts depend on besides the files (settings, skips)
    dates: frozenset[str] = frozenset()
    months: Mapping[str, str] = field(default_factory=dict)


def read_cursor(text: str | None, config: str) -> SettledCursor:
    """The cursor a tick left, or an empty one when there is none, it is another version's or
    another configuration's, or it cannot be read (a cursor is an optimisation, never a fact)."""
    try:
        data = json.loads(text) if text else None
        if not isinstance(data, dict) or data.get("v") != CURSOR_VERSION or data.get("config") != config:
            return SettledCursor(config)
        dates = frozenset(day for first, last in data["settled"] for day in days(first, last))
        return SettledCursor(config, dates, {str(k): str(v) for k, v in data["months"].items()})
    except (ValueError, TypeError, KeyError):
        return SettledCursor(config)


def write_cursor(cursor: SettledCursor, ranges: Sequence[tuple[str, str]]) -> str:
    """``ranges``: the settled dates as contiguous ranges, the form that keeps the cursor small."""
    data = {"v": CURSOR_VERSION, "config": cursor.config, "settled": ranges, "months": cursor.months}
    return canonical_json(data)


def month_digests(
    dates: Iterable[str], listing: Sequence[Listed], applied: Mapping[str, str]
) -> dict[str, str]:
    """Per month, the digest of its settled dates' manifest entries and applied identities."""
    chosen = set(dates)
    parts: dict[str, list[object]] = {}
    for day in sorted(chosen):
        parts.setdefault(day[:7], []).append(["applied", day, applied.get(day)])
    for item in sorted(listing, key=lambda item: item.path):
        if item.load_date in chosen:
            parts[item.load_date[:7]].append([item.path, item.fingerprint])
    return {month: sha256_text(canonical_json(found))[:16] for month, found in parts.items()}


def still_settled(
    cursor: SettledCursor, listing: Sequence[Listed], applied: Mapping[str, str]
) -> frozenset[str]:
    """The cursor's settled dates whose month digest still matches what the landing area and
    the warehouse say now."""
    now = month_digests(cursor.dates, listing, applied)
    return frozenset(day for day in cursor.dates if now.get(day[:7]) == cursor.months.get(day[:7]))


def is_settled(
    plan: DatePlan, of_day: Sequence[Delivery], applied: Mapping[str, str], landed: Mapping[str, str]
) -> bool:
    """Applied from exactly these deliveries, all landed as they are, none late or superseding."""
    return (
        plan.status is DateStatus.APPLIED
        and not plan.reason
        and not plan.late
        and bool(plan.batches)
        and applied.get(plan.load_date) == plan.identity
        and set(plan.batches) == set(of_day)
        and all(
            landed.get(d.batch_id) == d.manifest_sha256 and not d.supersedes and d.not_ready is None
            for d in of_day
        )
    )


def derived_starts(pairs: Iterable[tuple[str, str]]) -> dict[str, str]:
    """Each source's earliest load date among ``(source, load date)`` pairs."""
    starts: dict[str, str] = {}
    for source, day in pairs:
        starts[source] = min(starts.get(source, day), day)
    return starts
