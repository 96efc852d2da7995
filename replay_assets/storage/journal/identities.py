"""Operation identities of the journaled mutations: logical inputs only, so any retry finds the same entry."""

from __future__ import annotations

import datetime as dt

import duckdb

from replay_assets.core.plan import DatePlan
from replay_assets.storage.apply import certified
from replay_assets.storage.records import Operation
from replay_assets.storage.rules.identities import (
    apply_identity,
    digest_of_publications,
    prune_identity,
    publish_identity,
)


def publish_operation(con: duckdb.DuckDBPyConnection, dates: list[str]) -> Operation:
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


def apply_operation(con: duckdb.DuckDBPyConnection, plan: DatePlan) -> Operation:
    """Identity of applying a load date (``apply_identity``) from the warehouse."""
    prev = (dt.date.fromisoformat(plan.load_date) - dt.timedelta(days=1)).isoformat()
    upstream = certified.last_publication(con, "current_orders", prev)
    relanded = con.execute(  # a batch landed again (``resolve --action reland``) is a new input
        "SELECT batch_id, count(*) FROM batch_relandings WHERE list_contains(?, batch_id) "
        "GROUP BY 1 ORDER BY 1",
        [[b.batch_id for b in plan.batches]],
    ).fetchall()
    return apply_identity(plan, upstream[1] if upstream else "", [(str(b), int(n)) for b, n in relanded])


def prune_operation(con: duckdb.DuckDBPyConnection, day: str) -> Operation:
    row = con.execute("SELECT identity FROM load_dates WHERE load_date = ?", [day]).fetchall()
    return prune_identity(day, str(row[0][0]) if row else "")
