"""Publications written once for both engines over the unit's ``Sql``: each partition's newest
publication, new versions where ``verdicts.publishing`` says so (one append of publications and
one upsert of their partitions' status for every candidate), a load date's state certified with
the consumer pointer moved to it, and the queued groups a restatement will publish."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

from replay_assets.core.gate import CheckOutcome
from replay_assets.storage.apply.reading import CERTIFIED, certified_pointer
from replay_assets.storage.evidence.written_once import upsert_statuses
from replay_assets.storage.publish import verdicts
from replay_assets.storage.publish.steps import Candidate
from replay_assets.storage.rules.evidence import status_values
from replay_assets.storage.rules.identities import timestamp_text
from replay_assets.storage.rules.sql import Sql

NEWEST = """
SELECT partition_key, version, content_sha256, as_of_load_date FROM (
    SELECT partition_key, version, content_sha256, as_of_load_date,
           row_number() OVER (PARTITION BY partition_key ORDER BY version DESC) AS newest
    FROM publications WHERE asset = $asset AND list_contains($keys, partition_key)) p
WHERE newest = 1"""
# the queued groups of load dates the published pointer has reached
PENDING = """
SELECT business_date, store_id, load_date, queued_at FROM restatement_queue
WHERE released_at IS NULL
  AND load_date <= (SELECT max(value) FROM pointers WHERE name = 'published_load_date')"""


def last_publications(sql: Sql, asset: str, keys: list[str]) -> dict[str, tuple[int, str, str]]:
    """Each of ``keys``' newest publication of ``asset``: version, content hash, as-of load date
    (one query for them all)."""
    found = sql.rows(NEWEST, asset=asset, keys=list(keys) or [""])
    return {
        str(r["partition_key"]): (int(r["version"]), str(r["content_sha256"]), str(r["as_of_load_date"]))
        for r in found
    }


def record_publications(
    sql: Sql,
    asset: str,
    candidates: Sequence[Candidate],
    *,
    as_of: str,
    run_id: str | None,
    now: dt.datetime,
    repair_reason: str | None = None,
) -> dict[str, int | None]:
    """A new version for each candidate whose content changed and whose ``as_of`` is not older
    than its last publication (monotone); a repair always publishes one, with its reason, as the
    audit trail of the fix. Returns each candidate's new version, or None."""
    last = last_publications(sql, asset, [c.key for c in candidates])
    versions: dict[str, int | None] = {}
    rows, statuses = [], []
    for c in candidates:
        decided = verdicts.publishing(last.get(c.key), as_of, c.digest, repair_reason)
        versions[c.key] = decided.version
        good = (decided.version, c.digest) if decided.version is not None else None
        statuses.append(
            {
                "asset": asset,
                "partition_key": c.key,
                **status_values(decided.status, decided.reason, now, good),
            }
        )
        if decided.version is not None:
            row = {
                "asset": asset,
                "partition_key": c.key,
                "version": decided.version,
                "as_of_load_date": as_of,
            }
            row |= {"content_sha256": c.digest, "checks": verdicts.checks_json(c.checks), "certified_at": now}
            rows.append({**row, "run_id": run_id, "reason": decided.reason})
    sql.insert("publications", rows)
    upsert_statuses(sql, statuses)
    return versions


def certify_state(
    sql: Sql,
    day: str,
    digest: str,
    outcomes: Sequence[CheckOutcome],
    run_id: str | None,
    now: dt.datetime,
    repair_reason: str | None = None,
) -> None:
    """Publish the load date's snapshot (as a publication of aggregates is) and move the
    consumer pointer to it (never backwards)."""
    candidate = Candidate(day, digest, tuple(outcomes))
    record_publications(
        sql, "current_orders", [candidate], as_of=day, run_id=run_id, now=now, repair_reason=repair_reason
    )
    current = certified_pointer(sql)
    if current is None or current < day:
        sql.upsert("pointers", [{"name": CERTIFIED, "value": day}], on=("name",))


def pending_groups(sql: Sql) -> list[tuple[str, str, str, str]]:
    """The queued groups a restatement will publish: (business date, store, load date, queued
    at as text), in order."""
    groups = [
        (str(r["business_date"]), str(r["store_id"]), str(r["load_date"]), timestamp_text(r["queued_at"]))
        for r in sql.rows(PENDING)
    ]
    return sorted(groups, key=lambda g: g[:3])
