"""Operation identities of the journaled mutations: logical inputs only, so any retry finds the same entry."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Any

import duckdb

from replay_assets.core.events import canonical_json, sha256_text
from replay_assets.core.journal import intent_digest, operation_id
from replay_assets.core.plan import DatePlan
from replay_assets.storage.apply import certified
from replay_assets.storage.journal import entries


def publish_operation(con: duckdb.DuckDBPyConnection, dates: list[str]) -> entries.Operation:
    """Identity of publishing business dates: the dates, the certified state they are computed from
    (the pointer and its snapshot hash) and the queued restatements they release."""
    pointer = certified.pointer(con)
    upstream = certified.last_publication(con, "current_orders", pointer) if pointer else None
    # with the input identity of the load date that queued each group, and when it was queued: a
    # group queued again (a late delivery re-applied its load date) is a new publication to make
    queued = con.execute(
        """SELECT q.business_date, q.store_id, q.load_date, d.identity, CAST(q.queued_at AS VARCHAR)
        FROM restatement_queue q JOIN load_dates d USING (load_date)
        WHERE q.released_at IS NULL AND list_contains(?, q.business_date) ORDER BY ALL""",
        [dates],
    ).fetchall()
    return publish_identity(dates, pointer or "", upstream[1] if upstream else "", queued)


def publish_identity(
    dates: list[str], pointer: str, upstream: str, queued: Sequence[Sequence[object]]
) -> entries.Operation:
    """Identity of publishing ``dates`` from the certified ``pointer`` (whose snapshot hash is
    ``upstream``), releasing the ``queued`` groups: (business date, store, load date, the
    identity of the load date, queued at as ``timestamp_text``), in order (any engine)."""
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


def publications_digest(con: duckdb.DuckDBPyConnection, dates: list[str]) -> str:
    """What the target holds for these dates: their newest publication hashes."""
    rows = con.execute(
        """SELECT partition_key, version, content_sha256 FROM publications
        WHERE asset = 'daily_aggregates' AND list_contains(?, partition_key)
        QUALIFY row_number() OVER (PARTITION BY partition_key ORDER BY version DESC) = 1
        ORDER BY 1""",
        [dates],
    ).fetchall()
    return digest_of_publications(rows)


def digest_of_publications(newest: Sequence[Sequence[object]]) -> str:
    """The digest of each date's newest publication (date, version, content hash), in date
    order (any engine)."""
    return sha256_text(canonical_json([list(r) for r in newest]))


def apply_operation(con: duckdb.DuckDBPyConnection, plan: DatePlan) -> entries.Operation:
    """Identity of applying a load date (``apply_identity``) from the warehouse."""
    prev = (dt.date.fromisoformat(plan.load_date) - dt.timedelta(days=1)).isoformat()
    upstream = certified.last_publication(con, "current_orders", prev)
    relanded = con.execute(  # a batch landed again (``resolve --action reland``) is a new input
        "SELECT batch_id, count(*) FROM batch_relandings WHERE list_contains(?, batch_id) "
        "GROUP BY 1 ORDER BY 1",
        [[b.batch_id for b in plan.batches]],
    ).fetchall()
    return apply_identity(plan, upstream[1] if upstream else "", [(str(b), int(n)) for b, n in relanded])


def apply_identity(plan: DatePlan, upstream: str, relanded: Sequence[tuple[str, int]]) -> entries.Operation:
    """Identity of applying a load date: its input (manifest hashes) and its upstream content (the
    certified snapshot hash of the day before, ``upstream``), never a run id or a try; a batch
    landed again (``relanded``: batch id and times, in order) is a new input (any engine)."""
    parts: list[Any] = [plan.identity, upstream]
    if relanded:  # only then, so every other identity stays what it was
        parts.append([[b, n] for b, n in relanded])
    input_identity = canonical_json(parts)
    intent = {"batches": sorted([b.source, b.batch_id, b.manifest_sha256] for b in plan.batches)}
    return _operation(
        "apply_load_date", "current_orders", plan.load_date, input_identity=input_identity, intent=intent
    )


def prune_operation(con: duckdb.DuckDBPyConnection, day: str) -> entries.Operation:
    row = con.execute("SELECT identity FROM load_dates WHERE load_date = ?", [day]).fetchall()
    return prune_identity(day, str(row[0][0]) if row else "")


def prune_identity(day: str, applied: str) -> entries.Operation:
    """Identity of pruning a load date behind the horizon: the date and its applied input."""
    identity = canonical_json([day, applied])
    return _operation(
        "prune_load_date", "current_orders", day, input_identity=identity, intent={"prune_load_date": day}
    )


def _operation(
    kind: str, asset: str, key: str, *, input_identity: str, intent: dict[str, Any]
) -> entries.Operation:
    return entries.Operation(
        operation_id(kind, asset, key, input_identity),
        intent_digest(intent),
        kind=kind,
        asset=asset,
        partition_key=key,
        input_identity=input_identity,
    )
