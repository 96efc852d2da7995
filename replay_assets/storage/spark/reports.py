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
from replay_assets.core.errors import ErrorCode, ReplayError
from replay_assets.storage.apply import latest, reading
from replay_assets.storage.publish import procedure
from replay_assets.storage.rules.evidence import BATCH_COSTS
from replay_assets.storage.rules.published import AS_OF, AS_OF_HISTORY, ENTITIES, RECONCILE_SQL, TABLES
from replay_assets.storage.spark import schema
from replay_assets.storage.spark.dialect import over_tables
from replay_assets.storage.spark.facts import newest_publications
from replay_assets.storage.spark.frames import newest_per_key, to_polars
from replay_assets.storage.spark.gate import StoredSums
from replay_assets.storage.spark.publish import SparkCandidateSteps
from replay_assets.storage.spark.unit import On, SparkSql, UnitBase

_NEWEST = 7  # certified load dates ``reverify_state`` recomputes (as on DuckDB)


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


class SparkReports(On):
    def status_report(self) -> dict[str, list[dict[str, object]]]:
        """Partition status with the last good version, failed candidates and cost evidence."""
        candidates = self.u.frame("candidates").select(
            ["asset", "partition_key", "as_of_load_date", "reason", "rows_path", "rows_bytes", "created_at"]
        )
        return {
            "partitions": self.u.rows(self.u.frame("partition_status").orderBy("asset", "partition_key")),
            "candidates": self.u.rows(candidates.orderBy("created_at")),
            "costs": self.u.rows(self.u.frame("costs").orderBy("recorded_at", "step", "partition_key")),
            "batch_costs": self.u.rows(self.u.sql(over_tables(BATCH_COSTS))),
        }

    def reconciliation_report(self) -> list[dict[str, Any]]:
        return self.u.rows(self.u.sql(over_tables(RECONCILE_SQL)))

    def daily_totals(self, first: str, last: str) -> list[dict[str, Any]]:
        """Certified totals per business date over all stores."""
        day = F.col("business_date").cast("string")
        found = consumer_frame(self.u, "daily_aggregates").where(day.between(F.lit(first), F.lit(last)))
        totals = found.groupBy(day.alias("business_date")).agg(
            F.sum("order_count").alias("order_count"),
            F.sum("amount_minor").alias("amount_minor"),
            F.sum("gross_profit_minor").alias("gross_profit_minor"),
        )
        return self.u.rows(totals.orderBy("business_date"))

    def export_table(self, name: str, as_of: str | None) -> pl.DataFrame:
        """A table for ``replay-assets export`` (``exports.table``: the same names and refusals)."""
        if as_of is not None:
            if name not in AS_OF:
                raise ReplayError(ErrorCode.USAGE, f"--as-of applies to {', '.join(AS_OF)}, not {name}")
            behind = retention.refusal(as_of, reading.pruned_through(self.sql), "an as-of read")
            if behind:
                raise ReplayError(ErrorCode.BEHIND_HORIZON, behind)
            return to_polars(consumer_frame(self.u, name, as_of).orderBy(*_CONSUMER[name][1]))
        if name not in TABLES:
            raise ReplayError(ErrorCode.USAGE, f"unknown table {name}")
        return to_polars(export_frame(self.u, name))

    def reverify_aggregates(self) -> procedure.Verdict:
        steps = SparkCandidateSteps(self.u)
        pending = self.u.frame("restatement_queue").where(F.col("released_at").isNull())
        return procedure.aggregates_verdict(
            _newest_publications(self.u, "daily_aggregates"),
            horizon=reading.pruned_through(self.sql),
            current=reading.certified_pointer(self.sql) or "",
            pending={
                str(r["business_date"]) for r in self.u.rows(pending.select("business_date").distinct())
            },
            aggregates=lambda as_of, dates: steps.candidate_aggregates(dates, as_of=as_of, from_latest=False),
        )

    def reverify_state(self) -> procedure.Verdict:
        steps = StoredSums(self.u)
        newest = _newest_publications(self.u, "current_orders")
        newest = newest.filter(pl.col("partition_key") > reading.pruned_through(self.sql)).tail(_NEWEST)
        columns = [c for c in schema.schemas()["snapshots"].names if c not in ("load_date", "row_count")]

        def stored(day: str) -> tuple[object, ...] | None:
            found = self.u.rows(self.u.frame("snapshots").where(F.col("load_date") == F.lit(day)))
            return tuple(found[0][c] for c in columns) if found else None

        def recomputed(day: str) -> str:
            # every date this engine certified stored its sums (``store_digest``)
            return steps.full_sums(day).content_sha256 if steps.stored_sums(day) is not None else ""

        return procedure.state_verdict(
            newest,
            recomputed=recomputed,
            controls=lambda day: steps.recomputed_controls(day).as_tuple(),
            stored=stored,
            differing=latest.differences(self.sql),
            pointer=reading.certified_pointer(self.sql) or "",
        )


def consumer_frame(u: UnitBase, name: str, as_of: str | None = None) -> DataFrame:
    """A consumer table: ``current_orders``/``current_customers`` as of ``as_of`` (the
    certified pointer by default), or ``daily_aggregates``."""
    if name == "daily_aggregates":
        published = u.frame("publications").where(F.col("asset") == F.lit("daily_aggregates"))
        newest = published.groupBy(F.col("partition_key").alias("business_date")).agg(
            F.max("version").alias("publication_version")
        )
        versions = u.frame("aggregate_versions")
        return versions.join(newest, ["business_date", "publication_version"], "left_semi").selectExpr(
            *_AGGREGATES
        )
    history, key, columns = _CONSUMER[name]
    day = as_of if as_of is not None else reading.certified_pointer(SparkSql(u)) or ""
    return newest_per_key(u.frame(history).where(F.col("load_date") <= F.lit(day)), key).selectExpr(*columns)


def export_frame(u: UnitBase, name: str) -> DataFrame:
    """A table of ``rules.published.TABLES`` as a frame, in the DuckDB adapter's order."""
    if name in _CONSUMER:
        return consumer_frame(u, name).orderBy(*_CONSUMER[name][1])
    if name == "daily_aggregates":
        return consumer_frame(u, name).orderBy("business_date", "store_id")
    order, left_out = _EXPORTS[name]
    return u.frame(name).drop(*left_out).orderBy(*order)


def _newest_publications(u: UnitBase, asset: str) -> pl.DataFrame:
    columns = ("partition_key", "version", "as_of_load_date", "content_sha256")
    return to_polars(newest_publications(u, asset).select(*columns).orderBy("partition_key"))
