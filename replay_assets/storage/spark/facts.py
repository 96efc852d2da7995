"""What the Spark warehouse knows about load dates, for the plan and the landing and apply use
cases (the DuckDB adapter's ``storage/apply/facts.py`` and the reads of ``retention/prune.py``
and ``publish/certify.py``), and the attempts they record."""

from __future__ import annotations

import datetime as dt

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from replay_assets.core.plan import DatePlan, WarehouseFacts
from replay_assets.core.status import DateStatus, PartitionStatus
from replay_assets.storage.records import Operation
from replay_assets.storage.rules import identities
from replay_assets.storage.rules.apply import require_all_landed
from replay_assets.storage.rules.tables import PRUNED_THROUGH
from replay_assets.storage.spark.evidence import EvidenceOps
from replay_assets.storage.spark.frames import first_of

POINTER = "published_load_date"


class FactsOps(EvidenceOps):
    def warehouse_facts(self) -> WarehouseFacts:
        applied = {r["load_date"]: r["identity"] for r in self.rows(self.frame("load_dates"))}
        attempts = self.frame("load_date_attempts")
        newest = first_of(
            attempts, ("load_date", "identity"), F.col("attempted_at").desc(), F.col("seq").desc()
        )
        latest = self.rows(newest)
        blocked = {(r["load_date"], r["identity"]): (DateStatus(r["status"]), r["reason"]) for r in latest}
        skipped = frozenset(
            r["batch_id"] for r in self.rows(self.frame("batch_resolutions").select("batch_id"))
        )
        manifests = self.frame("manifests").select("batch_id", "manifest_sha256")
        landed = {r["batch_id"]: r["manifest_sha256"] for r in self.rows(manifests)}
        reconciled = self.frame("reconciliation").where(F.col("status") == F.lit("APPLIED"))
        counted = frozenset(r["batch_id"] for r in self.rows(reconciled.select("batch_id")))
        return WarehouseFacts(
            applied,
            blocked,
            skipped=skipped,
            landed=landed,
            pointer=self.certified_pointer() or "",
            pruned_through=self.pruned_through(),
            counted=counted,
        )

    def record_attempt(
        self, plan: DatePlan, *, status: PartitionStatus, reason: str, now: dt.datetime
    ) -> None:
        # keyed by the file fingerprints: replacing the broken file makes the date ready
        self.insert_attempt(plan.load_date, plan.attempt_key, status=status.value, reason=reason, now=now)
        self.set_status("current_orders", keys=[plan.load_date], status=status, reason=reason, now=now)

    def require_landed(self, plan: DatePlan) -> None:
        manifests = self.frame("manifests").where(F.col("load_date") == F.lit(plan.load_date))
        require_all_landed(plan, {r["batch_id"] for r in self.rows(manifests.select("batch_id"))})

    def certified_pointer(self) -> str | None:
        return self._pointer(POINTER) or None

    def pruned_through(self) -> str:
        """The newest pruned load date, or "" when nothing was pruned."""
        return self._pointer(PRUNED_THROUGH)

    def applied_dates(self) -> list[str]:
        dates = self.frame("load_dates").select("load_date").orderBy("load_date")
        return [str(r["load_date"]) for r in self.rows(dates)]

    def published_partitions(self, asset: str) -> list[str]:
        """Every partition of ``asset`` with a publication, in order."""
        found = self.frame("publications").where(F.col("asset") == F.lit(asset))
        keys = found.select("partition_key").distinct().orderBy("partition_key")
        return [str(r["partition_key"]) for r in self.rows(keys)]

    def newest_versions(self, partition: str) -> dict[str, int]:
        """Per asset, the newest publication version of ``partition``."""
        found = self.frame("publications").where(F.col("partition_key") == F.lit(partition))
        newest = found.groupBy("asset").agg(F.max("version").alias("v"))
        return {str(r["asset"]): int(r["v"]) for r in self.rows(newest)}

    def last_publication(self, asset: str, key: str) -> tuple[int, str, str] | None:
        """The newest publication of a partition: version, content hash, as-of load date."""
        found = self.frame("publications").where(
            (F.col("asset") == F.lit(asset)) & (F.col("partition_key") == F.lit(key))
        )
        rows = self.rows(found.orderBy(F.col("version").desc()).limit(1))
        if not rows:
            return None
        return int(rows[0]["version"]), str(rows[0]["content_sha256"]), str(rows[0]["as_of_load_date"])

    def apply_operation(self, plan: DatePlan) -> Operation:
        prev = (dt.date.fromisoformat(plan.load_date) - dt.timedelta(days=1)).isoformat()
        upstream = self.last_publication("current_orders", prev)
        batches = [b.batch_id for b in plan.batches]
        relandings = self.frame("batch_relandings").where(F.col("batch_id").isin(batches))
        counted = self.rows(relandings.groupBy("batch_id").count().orderBy("batch_id"))
        relanded = [(str(r["batch_id"]), int(r["count"])) for r in counted]
        return identities.apply_identity(plan, upstream[1] if upstream else "", relanded)

    def prune_operation(self, day: str) -> Operation:
        applied = self.rows(self.frame("load_dates").where(F.col("load_date") == F.lit(day)))
        return identities.prune_identity(day, str(applied[0]["identity"]) if applied else "")

    def publications_digest(self, dates: list[str]) -> str:
        """What the target holds for these dates: their newest publication hashes."""
        found = self.newest_publications("daily_aggregates").where(F.col("partition_key").isin(dates))
        rows = self.rows(found.select("partition_key", "version", "content_sha256").orderBy("partition_key"))
        return identities.digest_of_publications([list(r.values()) for r in rows])

    def newest_publications(self, asset: str) -> DataFrame:
        """Each partition's newest publication of ``asset``."""
        found = self.frame("publications").where(F.col("asset") == F.lit(asset))
        return first_of(found, ("partition_key",), F.col("version").desc())

    def _pointer(self, name: str) -> str:
        found = self.rows(self.frame("pointers").where(F.col("name") == F.lit(name)))
        return str(found[0]["value"]) if found else ""
