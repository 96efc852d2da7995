"""What the Spark warehouse reports: the consumer tables (``current_orders`` and
``current_customers`` as of the certified pointer, ``daily_aggregates`` at each date's newest
publication: the DuckDB migrations' views as frames), exports, status, reconciliation, costs and
service levels (the shared statements of ``rules/evidence.py`` and ``rules/published.py``), each
computed by Spark; only the answer comes back."""

from __future__ import annotations

from typing import Any

import polars as pl
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from replay_assets.core import retention
from replay_assets.core.config import SloPolicy
from replay_assets.core.errors import ErrorCode, ReplayError
from replay_assets.core.manifest import parse_instant
from replay_assets.core.slo import Slo, evaluate
from replay_assets.storage.rules.evidence import BATCH_COSTS, CONTRIBUTING, DAILY_SLOS, days_parameters
from replay_assets.storage.rules.published import AS_OF, AS_OF_HISTORY, ENTITIES, RECONCILE_SQL, TABLES
from replay_assets.storage.spark.dialect import over_tables
from replay_assets.storage.spark.facts import FactsOps
from replay_assets.storage.spark.frames import newest_per_key, to_polars


def _names(listed: str) -> tuple[str, ...]:
    return tuple(name.strip() for name in listed.split(","))


# the consumer tables as of a load date: per view, its history table, key and the consumer's
# columns of a history row (the DuckDB adapter's as-of macros' projection; no expression in it
# holds a comma)
_CONSUMER = {
    ENTITIES[entity][0]: (history, _names(key), _names(columns))
    for entity, (history, _macro, columns, key) in AS_OF_HISTORY.items()
}
# exports read a table whole, in the DuckDB adapter's order, without the columns it leaves out
_EXPORTS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "publications": (("asset", "partition_key", "version"), ()),
    "raw_receipts": (("load_date", "batch_id", "line_number"), ("payload",)),
    "rejected_events": (("load_date", "batch_id", "line_number"), ()),
    "reconciliation": (("load_date", "batch_id"), ()),
    "source_records": (("load_date", "batch_id", "record_number"), ("envelope",)),
    "upcast_events": (("load_date", "batch_id", "source_file", "schema_version"), ()),
    "partition_status": (("asset", "partition_key"), ()),
}
_AGGREGATES = (
    *("store_id", "CAST(business_date AS DATE) AS business_date", "order_count", "line_count", "units"),
    *("amount_minor", "cost_minor", "gross_profit_minor", "publication_version"),
    *("CAST(as_of_load_date AS DATE) AS as_of_load_date", "certified_at"),
)


class ReportOps(FactsOps):
    def consumer_frame(self, name: str, as_of: str | None = None) -> DataFrame:
        """A consumer table: ``current_orders``/``current_customers`` as of ``as_of`` (the
        certified pointer by default), or ``daily_aggregates``."""
        if name == "daily_aggregates":
            published = self.frame("publications").where(F.col("asset") == F.lit("daily_aggregates"))
            newest = published.groupBy(F.col("partition_key").alias("business_date")).agg(
                F.max("version").alias("publication_version")
            )
            versions = self.frame("aggregate_versions")
            return versions.join(newest, ["business_date", "publication_version"], "left_semi").selectExpr(
                *_AGGREGATES
            )
        history, key, columns = _CONSUMER[name]
        day = as_of if as_of is not None else self.certified_pointer() or ""
        return newest_per_key(self.frame(history).where(F.col("load_date") <= F.lit(day)), key).selectExpr(
            *columns
        )

    def export_table(self, name: str, as_of: str | None) -> pl.DataFrame:
        """A table for ``replay-assets export`` (``exports.table``: the same names and refusals)."""
        if as_of is not None:
            if name not in AS_OF:
                raise ReplayError(ErrorCode.USAGE, f"--as-of applies to {', '.join(AS_OF)}, not {name}")
            behind = retention.refusal(as_of, self.pruned_through(), "an as-of read")
            if behind:
                raise ReplayError(ErrorCode.BEHIND_HORIZON, behind)
            return to_polars(self.consumer_frame(name, as_of).orderBy(*_CONSUMER[name][1]))
        if name not in TABLES:
            raise ReplayError(ErrorCode.USAGE, f"unknown table {name}")
        return to_polars(self.export_frame(name))

    def export_frame(self, name: str) -> DataFrame:
        """A table of ``rules.published.TABLES`` as a frame, in the DuckDB adapter's order."""
        if name in _CONSUMER:
            return self.consumer_frame(name).orderBy(*_CONSUMER[name][1])
        if name == "daily_aggregates":
            return self.consumer_frame(name).orderBy("business_date", "store_id")
        order, left_out = _EXPORTS[name]
        return self.frame(name).drop(*left_out).orderBy(*order)

    def status_report(self) -> dict[str, list[dict[str, object]]]:
        """Partition status with the last good version, failed candidates and cost evidence."""
        candidates = self.frame("candidates").select(
            ["asset", "partition_key", "as_of_load_date", "reason", "rows_path", "rows_bytes", "created_at"]
        )
        return {
            "partitions": self.rows(self.frame("partition_status").orderBy("asset", "partition_key")),
            "candidates": self.rows(candidates.orderBy("created_at")),
            "costs": self.rows(self.frame("costs").orderBy("recorded_at", "step", "partition_key")),
            "batch_costs": self.batch_costs(),
        }

    def batch_costs(self) -> list[dict[str, object]]:
        return self.rows(self.sql(over_tables(BATCH_COSTS)))

    def reconciliation_report(self) -> list[dict[str, Any]]:
        return self.rows(self.sql(over_tables(RECONCILE_SQL)))

    def check_segments(self) -> tuple[int, list[dict[str, object]]]:
        """None to check: the Spark adapter lands every row into its Delta tables."""
        return 0, []

    def daily_totals(self, first: str, last: str) -> list[dict[str, Any]]:
        """Certified totals per business date over all stores."""
        day = F.col("business_date").cast("string")
        found = self.consumer_frame("daily_aggregates").where(day.between(F.lit(first), F.lit(last)))
        totals = found.groupBy(day.alias("business_date")).agg(
            F.sum("order_count").alias("order_count"),
            F.sum("amount_minor").alias("amount_minor"),
            F.sum("gross_profit_minor").alias("gross_profit_minor"),
        )
        return self.rows(totals.orderBy("business_date"))

    def run_costs(self, run_id: str, step: str) -> dict[str, float]:
        """Totals of one step of one run (``costs.run_costs``)."""
        found = self.frame("costs").where((F.col("run_id") == F.lit(run_id)) & (F.col("step") == F.lit(step)))
        row = found.agg(
            F.count(F.lit(1)).alias("cost_records"),
            *(F.coalesce(F.sum(c), F.lit(0)).alias(c) for c in ("events", "bytes_read")),
            *(F.round(F.coalesce(F.sum(c), F.lit(0.0)), 3).alias(c) for c in ("cpu_seconds", "wall_seconds")),
            *(F.coalesce(F.sum(c), F.lit(0)).alias(c) for c in ("rows_written", "candidate_bytes")),
        ).collect()[0]
        return {name: float(value) for name, value in row.asDict().items()}

    def slo_for(self, load_date: str, policy: SloPolicy) -> Slo | None:
        """The service levels of the load date's delivery: its first certification."""
        first = self.frame("publications").where(
            (F.col("asset") == F.lit("current_orders")) & (F.col("partition_key") == F.lit(load_date))
        )
        published = self.rows(first.orderBy("version").limit(1))
        if not published:
            return None
        inputs = self.rows(self.sql(over_tables(CONTRIBUTING), day=load_date))[0]
        if inputs["ready_at"] is None:
            return None
        attempts = self.frame("step_attempts").where(F.col("run_id") == F.lit(published[0]["run_id"]))
        started = self.rows(attempts.agg(F.min("recorded_at").alias("s")))[0]["s"]
        return evaluate(
            policy,
            load_date,
            certified_at=published[0]["certified_at"],
            ready_at=parse_instant(str(inputs["ready_at"]), "ready_at"),
            run_started_at=started,
            declared_events=int(inputs["declared"]),
            landed_events=int(inputs["landed"]),
        )

    def daily_slos(
        self, policy: SloPolicy, business_dates: list[str] | None = None
    ) -> dict[str, tuple[Slo, str]]:
        """Per certified business date: its service levels and the load date that last fed it."""
        out = {}
        found = self.sql(over_tables(DAILY_SLOS), **days_parameters(business_dates))
        for r in self.rows(found):
            slo = evaluate(
                policy,
                str(r["load_date"]),
                certified_at=r["certified_at"],
                ready_at=parse_instant(str(r["ready_at"]), "ready_at"),
                run_started_at=r["started"],
                declared_events=int(r["declared"]),
                landed_events=int(r["landed"]),
            )
            out[str(r["business_date"])] = (slo, str(r["load_date"]))
        return out
