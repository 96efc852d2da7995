"""What is published, on Delta: the identity of a publishing and the groups it releases, the
certification steps a repair calls, re-verification (the engine-neutral verdicts of
``publish/procedure.py`` over this engine's recomputations) and the published copy.

The published copy on this engine is a Delta table per consumer table under
``<warehouse>/published/`` (``current_orders`` and ``current_customers`` as of the certified
pointer, ``daily_aggregates``, ``publications``, ``reconciliation``, ``partition_status``), each
rewritten in one Delta commit when a table it is read from moved since it was last written. A reader of the
warehouse never waits on a writer here (it reads the newest fence), so the copy is for consumers
that read Delta directly, not a stand-in for a busy warehouse (docs/deploy.md)."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Sequence
from pathlib import Path

import polars as pl
from pyspark.sql import functions as F

from replay_assets.core.aggregate import Controls
from replay_assets.core.gate import CheckOutcome
from replay_assets.storage.home.home_files import read_own_file, write_own_file
from replay_assets.storage.publish import procedure
from replay_assets.storage.records import Operation
from replay_assets.storage.rules import identities
from replay_assets.storage.rules.latest import COLUMNS, LATEST
from replay_assets.storage.rules.published import PUBLISHED
from replay_assets.storage.spark import schema
from replay_assets.storage.spark.apply import ApplyOps, SparkApplySteps
from replay_assets.storage.spark.frames import newest_per_key, to_polars
from replay_assets.storage.spark.journal import JournalOps
from replay_assets.storage.spark.publish import SparkPublishSteps
from replay_assets.storage.spark.reports import ReportOps

_NEWEST = 7  # certified load dates ``reverify_state`` recomputes (as on DuckDB)
_EXPORTED = "published-spark.json"  # under the home: the versions the copy was last written from
# the warehouse tables each table of the published copy is read from (``export_frame``)
_SOURCES = {
    "current_orders": ("order_history", "pointers"),
    "current_customers": ("customer_history", "pointers"),
    "daily_aggregates": ("publications", "aggregate_versions"),
    "publications": ("publications",),
    "reconciliation": ("reconciliation",),
    "partition_status": ("partition_status",),
}


class PublishedOps(ReportOps, ApplyOps, JournalOps):
    def publish_operation(self, dates: list[str]) -> Operation:
        pointer = self.certified_pointer()
        upstream = self.last_publication("current_orders", pointer) if pointer else None
        queue = self.frame("restatement_queue").where(
            F.col("released_at").isNull() & F.col("business_date").isin(dates)
        )
        joined = queue.join(self.frame("load_dates").select("load_date", "identity"), ["load_date"])
        found = self.rows(joined.select(["business_date", "store_id", "load_date", "identity", "queued_at"]))
        queued = sorted(
            (
                r["business_date"],
                r["store_id"],
                r["load_date"],
                r["identity"],
                identities.timestamp_text(r["queued_at"]),
            )
            for r in found
        )
        return identities.publish_identity(dates, pointer or "", upstream[1] if upstream else "", queued)

    def pending_groups(self) -> list[tuple[str, str, str, str]]:
        """The queued groups a restatement will publish (``aggregates.pending_groups``)."""
        pointer = self.certified_pointer()
        if pointer is None:
            return []
        queue = self.frame("restatement_queue").where(
            F.col("released_at").isNull() & (F.col("load_date") <= F.lit(pointer))
        )
        found = self.rows(queue.select("business_date", "store_id", "load_date", "queued_at"))
        groups = [
            (
                str(r["business_date"]),
                str(r["store_id"]),
                str(r["load_date"]),
                identities.timestamp_text(r["queued_at"]),
            )
            for r in found
        ]
        return sorted(groups, key=lambda g: g[:3])

    def certify_state(
        self,
        day: str,
        *,
        digest: str,
        outcomes: Sequence[CheckOutcome],
        run_id: str | None,
        now: dt.datetime,
        repair_reason: str | None = None,
    ) -> None:
        SparkApplySteps(self).certify_state(
            day, digest=digest, outcomes=outcomes, run_id=run_id, now=now, repair_reason=repair_reason
        )

    def write_snapshot(self, day: str, *, controls: Controls, rows: int, digest: str) -> None:
        SparkApplySteps(self).write_snapshot(day, controls, rows, digest)

    def record_failed_candidate(
        self,
        home: Path,
        *,
        asset: str,
        key: str,
        as_of: str,
        digest: str,
        outcomes: Sequence[CheckOutcome],
        rows: pl.DataFrame,
        run_id: str | None,
        now: dt.datetime,
    ) -> Path:
        return SparkPublishSteps(self).record_failed_candidate(
            home,
            asset=asset,
            key=key,
            as_of=as_of,
            digest=digest,
            outcomes=outcomes,
            rows=rows,
            run_id=run_id,
            now=now,
        )

    def reverify_aggregates(self) -> procedure.Verdict:
        steps = SparkPublishSteps(self)
        pending = self.frame("restatement_queue").where(F.col("released_at").isNull())
        return procedure.aggregates_verdict(
            self._newest_publications("daily_aggregates"),
            horizon=self.pruned_through(),
            current=self.certified_pointer() or "",
            pending={str(r["business_date"]) for r in self.rows(pending.select("business_date").distinct())},
            aggregates=lambda as_of, dates: steps.candidate_aggregates(dates, as_of=as_of, from_latest=False),
        )

    def reverify_state(self) -> procedure.Verdict:
        steps = SparkApplySteps(self)
        latest = self._newest_publications("current_orders")
        latest = latest.filter(pl.col("partition_key") > self.pruned_through()).tail(_NEWEST)
        columns = [c for c in schema.schemas()["snapshots"].names if c not in ("load_date", "row_count")]

        def stored(day: str) -> tuple[object, ...] | None:
            found = self.rows(self.frame("snapshots").where(F.col("load_date") == F.lit(day)))
            return tuple(found[0][c] for c in columns) if found else None

        def recomputed(day: str) -> str:
            # every date this engine certified stored its sums (``store_digest``)
            return steps.full_sums(day).content_sha256 if steps.stored_sums(day) is not None else ""

        return procedure.state_verdict(
            latest,
            recomputed=recomputed,
            controls=lambda day: steps.recomputed_controls(day).as_tuple(),
            stored=stored,
            differing=self._latest_differences(),
            pointer=self.certified_pointer() or "",
        )

    def refresh_published_copy(self, home: Path) -> list[str]:
        """Rewrite each consumer table under ``<warehouse>/published/`` whose sources moved since
        it was last written (idempotent): a publication rewrites the aggregates, not the current
        state it did not change. Refuses while an operator holds an operation."""
        self.require_no_hold()
        found = read_own_file(home, _EXPORTED)
        held = json.loads(found) if found is not None else {}
        if held.get("warehouse") != self.tables.root:
            held = {}
        fences = {name: [self.snapshot.versions.get(t) for t in _SOURCES[name]] for name in sorted(PUBLISHED)}
        written = []
        for name, fence in fences.items():
            if held.get("tables", {}).get(name) == fence:
                continue
            self.export_frame(name).write.format("delta").mode("overwrite").option(
                "overwriteSchema", "true"
            ).save(f"{self.tables.root}/published/{name}")
            written.append(f"published/{name}")
        if written:
            exported = {"warehouse": self.tables.root, "tables": fences}
            write_own_file(home, _EXPORTED, json.dumps(exported).encode())
        return written

    def _newest_publications(self, asset: str) -> pl.DataFrame:
        columns = ("partition_key", "version", "as_of_load_date", "content_sha256")
        return to_polars(self.newest_publications(asset).select(*columns).orderBy("partition_key"))

    def _latest_differences(self) -> int:
        """Rows by which the latest tables differ from each key's newest history row."""
        total = 0
        for history, (latest, key, _entity, _part) in LATEST.items():
            expected = newest_per_key(self.frame(history), key).select(*COLUMNS[history])
            held = self.frame(latest).select(*COLUMNS[history])
            total += int(held.exceptAll(expected).count()) + int(expected.exceptAll(held).count())
        return total
