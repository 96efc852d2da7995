"""Operation identities of the journaled mutations, read from the warehouse by statements both
engines run: logical inputs only, so any retry finds the same entry."""

from __future__ import annotations

import datetime as dt

from replay_assets.core.plan import DatePlan
from replay_assets.storage.apply.reading import certified_pointer, last_publication
from replay_assets.storage.records import Operation
from replay_assets.storage.rules.identities import (
    apply_identity,
    digest_of_publications,
    prune_identity,
    publish_identity,
    timestamp_text,
)
from replay_assets.storage.rules.sql import Sql

# the groups a publishing releases, with the input identity of the load date that queued each and
# when it was queued: a group queued again (a late delivery re-applied its load date) is a new
# publication to make
QUEUED = """
SELECT q.business_date, q.store_id, q.load_date, d.identity, q.queued_at
FROM restatement_queue q JOIN load_dates d ON d.load_date = q.load_date
WHERE q.released_at IS NULL AND list_contains($dates, q.business_date)"""
NEWEST_AGGREGATES = """
SELECT partition_key, version, content_sha256 FROM (
    SELECT partition_key, version, content_sha256,
           row_number() OVER (PARTITION BY partition_key ORDER BY version DESC) AS newest
    FROM publications WHERE asset = 'daily_aggregates' AND list_contains($dates, partition_key)) p
WHERE newest = 1 ORDER BY partition_key"""
# a batch landed again (``resolve --action reland``) is a new input
RELANDED = """
SELECT batch_id, count(*) AS landings FROM batch_relandings WHERE list_contains($batches, batch_id)
GROUP BY batch_id ORDER BY batch_id"""
APPLIED_AS = "SELECT identity FROM load_dates WHERE load_date = $day"


def publish_operation(sql: Sql, dates: list[str]) -> Operation:
    """Identity of publishing business dates: the dates, the certified state they are computed
    from (the pointer and its snapshot hash) and the queued restatements they release."""
    pointer = certified_pointer(sql)
    upstream = last_publication(sql, "current_orders", pointer) if pointer else None
    queued = sorted(
        (r["business_date"], r["store_id"], r["load_date"], r["identity"], timestamp_text(r["queued_at"]))
        for r in sql.rows(QUEUED, dates=list(dates) or [""])
    )
    return publish_identity(dates, pointer or "", upstream[1] if upstream else "", queued)


def publications_digest(sql: Sql, dates: list[str]) -> str:
    """What the target holds for these dates: their newest publication hashes."""
    rows = sql.rows(NEWEST_AGGREGATES, dates=list(dates) or [""])
    return digest_of_publications([list(r.values()) for r in rows])


def apply_operation(sql: Sql, plan: DatePlan) -> Operation:
    """Identity of applying a load date (``apply_identity``) from the warehouse."""
    prev = (dt.date.fromisoformat(plan.load_date) - dt.timedelta(days=1)).isoformat()
    upstream = last_publication(sql, "current_orders", prev)
    batches = [b.batch_id for b in plan.batches] or [""]
    relanded = [(str(r["batch_id"]), int(r["landings"])) for r in sql.rows(RELANDED, batches=batches)]
    return apply_identity(plan, upstream[1] if upstream else "", relanded)


def prune_operation(sql: Sql, day: str) -> Operation:
    found = sql.rows(APPLIED_AS, day=day)
    return prune_identity(day, str(found[0]["identity"]) if found else "")
