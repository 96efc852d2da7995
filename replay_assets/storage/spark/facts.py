"""What the Spark warehouse knows about load dates and publications (the DuckDB adapter's
``storage/apply/facts.py`` and the reads of ``retention/prune.py`` and ``publish/certify.py``):
the reads several capabilities share, as functions of the unit, and the apply port's reads."""

from __future__ import annotations

import datetime as dt

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from replay_assets.core.plan import DatePlan, WarehouseFacts
from replay_assets.core.status import DateStatus
from replay_assets.storage.records import Operation
from replay_assets.storage.rules import identities
from replay_assets.storage.rules.apply import require_all_landed
from replay_assets.storage.rules.digest import target_digest_of
from replay_assets.storage.rules.tables import PRUNED_THROUGH
from replay_assets.storage.spark.frames import first_of
from replay_assets.storage.spark.unit import On, UnitBase

POINTER = "published_load_date"
SNAPSHOT = (
    "active_lines", "distinct_orders", "units", "amount_minor", "cost_minor", "gross_profit_minor",
    "row_count", "content_sha256",
)  # fmt: skip


def pointer(u: UnitBase, name: str) -> str:
    found = u.rows(u.frame("pointers").where(F.col("name") == F.lit(name)))
    return str(found[0]["value"]) if found else ""


def certified_pointer(u: UnitBase) -> str | None:
    return pointer(u, POINTER) or None


def pruned_through(u: UnitBase) -> str:
    """The newest pruned load date, or "" when nothing was pruned."""
    return pointer(u, PRUNED_THROUGH)


def published_partitions(u: UnitBase, asset: str) -> list[str]:
    """Every partition of ``asset`` with a publication, in order."""
    found = u.frame("publications").where(F.col("asset") == F.lit(asset))
    keys = found.select("partition_key").distinct().orderBy("partition_key")
    return [str(r["partition_key"]) for r in u.rows(keys)]


def last_publication(u: UnitBase, asset: str, key: str) -> tuple[int, str, str] | None:
    """The newest publication of a partition: version, content hash, as-of load date."""
    found = u.frame("publications").where(
        (F.col("asset") == F.lit(asset)) & (F.col("partition_key") == F.lit(key))
    )
    rows = u.rows(found.orderBy(F.col("version").desc()).limit(1))
    if not rows:
        return None
    return int(rows[0]["version"]), str(rows[0]["content_sha256"]), str(rows[0]["as_of_load_date"])


def newest_publications(u: UnitBase, asset: str) -> DataFrame:
    """Each partition's newest publication of ``asset``."""
    found = u.frame("publications").where(F.col("asset") == F.lit(asset))
    return first_of(found, ("partition_key",), F.col("version").desc())


def digest_of_target(u: UnitBase, day: str, state_sha256: str) -> str:
    """What applying ``day`` left in the target (``target_digest_of``)."""
    snapshot = u.rows(u.frame("snapshots").where(F.col("load_date") == F.lit(day)))
    values = [snapshot[0][c] for c in SNAPSHOT] if snapshot else None
    publication = last_publication(u, "current_orders", day)
    return target_digest_of(state_sha256, values, publication[1] if publication else None)


class ApplyReading(On):
    def warehouse_facts(self) -> WarehouseFacts:
        u = self.u
        applied = {r["load_date"]: r["identity"] for r in u.rows(u.frame("load_dates"))}
        attempts = u.frame("load_date_attempts")
        newest = first_of(
            attempts, ("load_date", "identity"), F.col("attempted_at").desc(), F.col("seq").desc()
        )
        blocked = {
            (r["load_date"], r["identity"]): (DateStatus(r["status"]), r["reason"]) for r in u.rows(newest)
        }
        skipped = frozenset(r["batch_id"] for r in u.rows(u.frame("batch_resolutions").select("batch_id")))
        manifests = u.frame("manifests").select("batch_id", "manifest_sha256")
        landed = {r["batch_id"]: r["manifest_sha256"] for r in u.rows(manifests)}
        reconciled = u.frame("reconciliation").where(F.col("status") == F.lit("APPLIED"))
        counted = frozenset(r["batch_id"] for r in u.rows(reconciled.select("batch_id")))
        return WarehouseFacts(
            applied,
            blocked,
            skipped=skipped,
            landed=landed,
            pointer=certified_pointer(u) or "",
            pruned_through=pruned_through(u),
            counted=counted,
        )

    def require_landed(self, plan: DatePlan) -> None:
        manifests = self.u.frame("manifests").where(F.col("load_date") == F.lit(plan.load_date))
        require_all_landed(plan, {r["batch_id"] for r in self.u.rows(manifests.select("batch_id"))})

    def apply_operation(self, plan: DatePlan) -> Operation:
        prev = (dt.date.fromisoformat(plan.load_date) - dt.timedelta(days=1)).isoformat()
        upstream = last_publication(self.u, "current_orders", prev)
        batches = [b.batch_id for b in plan.batches]
        relandings = self.u.frame("batch_relandings").where(F.col("batch_id").isin(batches))
        counted = self.u.rows(relandings.groupBy("batch_id").count().orderBy("batch_id"))
        relanded = [(str(r["batch_id"]), int(r["count"])) for r in counted]
        return identities.apply_identity(plan, upstream[1] if upstream else "", relanded)

    def target_digest(self, day: str, state_digest: str) -> str:
        return digest_of_target(self.u, day, state_digest)
