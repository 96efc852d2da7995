"""What the warehouse knows about load dates and publications, written once for both engines
over the unit's ``Sql``: the plan's facts, the pointers, a partition's newest publication and the
digest of what applying a load date left in the target (the journal compares it on a retry)."""

from __future__ import annotations

from replay_assets.core.aggregate import Controls
from replay_assets.core.plan import DatePlan, WarehouseFacts
from replay_assets.core.status import DateStatus
from replay_assets.storage.rules.apply import require_all_landed
from replay_assets.storage.rules.digest import ENTITIES, LIMBS, StateDigest, target_digest_of
from replay_assets.storage.rules.sql import Sql
from replay_assets.storage.rules.tables import PRUNED_THROUGH

CERTIFIED = "published_load_date"
POINTER = "SELECT value FROM pointers WHERE name = $name"
APPLIED = "SELECT load_date, identity FROM load_dates"
# the newest attempt at each input of a load date (``seq`` orders attempts at one instant)
NEWEST_ATTEMPTS = """
SELECT load_date, identity, status, reason FROM (
    SELECT load_date, identity, status, reason, row_number() OVER (
        PARTITION BY load_date, identity ORDER BY attempted_at DESC, seq DESC) AS newest
    FROM load_date_attempts) a
WHERE newest = 1"""
SKIPPED = "SELECT batch_id FROM batch_resolutions"
LANDED = "SELECT batch_id, manifest_sha256 FROM manifests"
# batches an application of their load date counted: a late batch is not, until one counts it
COUNTED = "SELECT batch_id FROM reconciliation WHERE status = 'APPLIED'"
LANDED_ON = "SELECT batch_id FROM manifests WHERE load_date = $day"
LAST_PUBLICATION = """
SELECT version, content_sha256, as_of_load_date FROM publications
WHERE asset = $asset AND partition_key = $key ORDER BY version DESC LIMIT 1"""
# the snapshot record's values but the load date, in column order (``target_digest_of``)
SNAPSHOT = """
SELECT active_lines, distinct_orders, units, amount_minor, cost_minor, gross_profit_minor, row_count,
       content_sha256
FROM snapshots WHERE load_date = $day"""
APPLIED_AS = "SELECT identity FROM load_dates WHERE load_date = $day"
APPLIED_RANGE = "SELECT min(load_date) AS first, max(load_date) AS newest FROM load_dates"
APPLIED_DATES = "SELECT load_date FROM load_dates ORDER BY load_date"
PUBLISHED = "SELECT DISTINCT partition_key FROM publications WHERE asset = $asset ORDER BY partition_key"
NEWEST_VERSIONS = """
SELECT asset, max(version) AS version FROM publications WHERE partition_key = $partition GROUP BY asset"""
PREVIOUS = "SELECT max(load_date) AS previous FROM load_dates WHERE load_date < $day"
STORED_SUMS = "SELECT entity, rows, s0, s1, s2, s3 FROM state_digests WHERE load_date = $day"
# the target hash the journal recorded for the newest completed application of a load date
RECORDED_TARGET = """
SELECT target_sha256 FROM operations
WHERE kind IN ('apply_load_date', 'repair_apply_load_date') AND partition_key = $day AND state = 'COMPLETE'
ORDER BY updated_at DESC LIMIT 1"""


def pointer(sql: Sql, name: str) -> str:
    found = sql.rows(POINTER, name=name)
    return str(found[0]["value"]) if found else ""


def certified_pointer(sql: Sql) -> str | None:
    return pointer(sql, CERTIFIED) or None


def pruned_through(sql: Sql) -> str:
    """The newest pruned load date, or "" when nothing was pruned."""
    return pointer(sql, PRUNED_THROUGH)


def last_publication(sql: Sql, asset: str, key: str) -> tuple[int, str, str] | None:
    """The newest publication of a partition: version, content hash, as-of load date."""
    found = sql.rows(LAST_PUBLICATION, asset=asset, key=key)
    if not found:
        return None
    return int(found[0]["version"]), str(found[0]["content_sha256"]), str(found[0]["as_of_load_date"])


def warehouse_facts(sql: Sql) -> WarehouseFacts:
    blocked = {
        (r["load_date"], r["identity"]): (DateStatus(r["status"]), r["reason"])
        for r in sql.rows(NEWEST_ATTEMPTS)
    }
    return WarehouseFacts(
        {r["load_date"]: r["identity"] for r in sql.rows(APPLIED)},
        blocked,
        skipped=frozenset(r["batch_id"] for r in sql.rows(SKIPPED)),
        landed={r["batch_id"]: r["manifest_sha256"] for r in sql.rows(LANDED)},
        pointer=certified_pointer(sql) or "",
        pruned_through=pruned_through(sql),
        counted=frozenset(r["batch_id"] for r in sql.rows(COUNTED)),
    )


def require_landed(sql: Sql, plan: DatePlan) -> None:
    require_all_landed(plan, {r["batch_id"] for r in sql.rows(LANDED_ON, day=plan.load_date)})


def target_digest(sql: Sql, day: str, state_digest: str) -> str:
    """What applying a load date left in the target (``target_digest_of``). A retry compares it
    with the journal's record (drift means repair)."""
    snapshot = sql.rows(SNAPSHOT, day=day)
    publication = last_publication(sql, "current_orders", day)
    values = list(snapshot[0].values()) if snapshot else None
    return target_digest_of(state_digest, values, publication[1] if publication else None)


def applied_identity(sql: Sql, day: str) -> str | None:
    """The input identity ``day`` was applied with; None when it is not applied."""
    found = sql.rows(APPLIED_AS, day=day)
    return str(found[0]["identity"]) if found else None


def newest_applied(sql: Sql) -> str | None:
    newest = sql.rows(APPLIED_RANGE)[0]["newest"]
    return str(newest) if newest is not None else None


def first_applied(sql: Sql) -> str | None:
    first = sql.rows(APPLIED_RANGE)[0]["first"]
    return str(first) if first is not None else None


def applied_dates(sql: Sql) -> list[str]:
    return [str(r["load_date"]) for r in sql.rows(APPLIED_DATES)]


def previous_date(sql: Sql, day: str) -> str | None:
    """The applied load date before ``day``, if any."""
    previous = sql.rows(PREVIOUS, day=day)[0]["previous"]
    return str(previous) if previous is not None else None


class StoredSums:
    """What ``rules.digest.base_of`` and re-verification read of a certified load date: its
    stored sums and controls, and whether they are what the journal recorded its application
    leaving. An engine's subclass adds the recomputations (``full_sums``, ``recomputed_controls``)."""

    def __init__(self, sql: Sql) -> None:
        self.sql = sql

    def stored_sums(self, day: str) -> StateDigest | None:
        found = self.sql.rows(STORED_SUMS, day=day)
        columns = ("rows", *(f"s{i}" for i in range(LIMBS)))
        sums = {str(r["entity"]): tuple(int(r[c]) for c in columns) for r in found}
        return StateDigest(sums) if set(sums) == set(ENTITIES) else None

    def stored_controls(self, day: str) -> Controls | None:
        found = self.sql.rows(SNAPSHOT, day=day)
        return Controls(*(int(v) for v in list(found[0].values())[:6])) if found else None

    def intact(self, day: str, sums: StateDigest) -> bool:
        snapshot = self.sql.rows(SNAPSHOT, day=day)
        recorded = self.sql.rows(RECORDED_TARGET, day=day)
        return (
            bool(snapshot)
            and snapshot[0]["content_sha256"] == sums.content_sha256
            and bool(recorded)
            and recorded[0]["target_sha256"] == target_digest(self.sql, day, sums.content_sha256)
        )


def published_partitions(sql: Sql, asset: str) -> list[str]:
    """Every partition of ``asset`` with a publication, in order."""
    return [str(r["partition_key"]) for r in sql.rows(PUBLISHED, asset=asset)]


def certified_load_dates(sql: Sql) -> set[str]:
    return set(published_partitions(sql, "current_orders"))


def newest_versions(sql: Sql, partition: str) -> dict[str, int]:
    """Per asset, the newest publication version of ``partition``."""
    return {str(r["asset"]): int(r["version"]) for r in sql.rows(NEWEST_VERSIONS, partition=partition)}
