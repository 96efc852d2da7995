"""Operation identities of the journaled mutations, from what each engine reads: logical inputs
only, so any retry finds the same entry, and equal on both engines (a mutation begun on one is
found by the other's recovery)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Any

from replay_assets.core.events import canonical_json, sha256_text
from replay_assets.core.journal import intent_digest, operation_id
from replay_assets.core.plan import DatePlan
from replay_assets.storage.rules.journal import Operation


def publish_identity(
    dates: list[str], pointer: str, upstream: str, queued: Sequence[Sequence[object]]
) -> Operation:
    """Identity of publishing ``dates`` from the certified ``pointer`` (whose snapshot hash is
    ``upstream``), releasing the ``queued`` groups: (business date, store, load date, the
    identity of the load date, queued at as ``timestamp_text``), in order."""
    input_identity = canonical_json([dates, pointer, upstream, [list(q) for q in queued]])
    key = f"{dates[0]}..{dates[-1]}" if dates else ""
    intent = {"business_dates": dates}
    return _operation(
        "publish_aggregates", "daily_aggregates", key, input_identity=input_identity, intent=intent
    )


def timestamp_text(moment: dt.datetime) -> str:
    """An instant as DuckDB casts a UTC ``TIMESTAMPTZ`` to text (``2026-09-02 06:00:00.12+00``):
    the identities above hash it, so every engine renders it this way."""
    utc = moment.astimezone(dt.UTC) if moment.tzinfo else moment
    fraction = f".{utc.microsecond:06d}".rstrip("0") if utc.microsecond else ""
    return f"{utc:%Y-%m-%d %H:%M:%S}{fraction}+00"


def digest_of_publications(newest: Sequence[Sequence[object]]) -> str:
    """The digest of each date's newest publication (date, version, content hash), in date
    order."""
    return sha256_text(canonical_json([list(r) for r in newest]))


def apply_identity(plan: DatePlan, upstream: str, relanded: Sequence[tuple[str, int]]) -> Operation:
    """Identity of applying a load date: its input (manifest hashes) and its upstream content (the
    certified snapshot hash of the day before, ``upstream``), never a run id or a try; a batch
    landed again (``relanded``: batch id and times, in order) is a new input."""
    parts: list[Any] = [plan.identity, upstream]
    if relanded:  # only then, so every other identity stays what it was
        parts.append([[b, n] for b, n in relanded])
    input_identity = canonical_json(parts)
    intent = {"batches": sorted([b.source, b.batch_id, b.manifest_sha256] for b in plan.batches)}
    return _operation(
        "apply_load_date", "current_orders", plan.load_date, input_identity=input_identity, intent=intent
    )


def prune_identity(day: str, applied: str) -> Operation:
    """Identity of pruning a load date behind the horizon: the date and its applied input."""
    identity = canonical_json([day, applied])
    return _operation(
        "prune_load_date", "current_orders", day, input_identity=identity, intent={"prune_load_date": day}
    )


def _operation(kind: str, asset: str, key: str, *, input_identity: str, intent: dict[str, Any]) -> Operation:
    return Operation(
        operation_id(kind, asset, key, input_identity),
        intent_digest(intent),
        kind=kind,
        asset=asset,
        partition_key=key,
        input_identity=input_identity,
    )
