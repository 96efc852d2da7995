"""What the Spark warehouse reports its own way: the consumer tables (``current_orders`` and
``current_customers`` as of the certified pointer, ``daily_aggregates`` at each date's newest
publication: the DuckDB migrations' views as frames), their exports and daily totals, and the
state's re-verification by this engine's row hashing; each computed by Spark, only the answer
comes back. Status, reconciliation and the aggregates' re-verification are written once
(``capabilities/shared.py``)."""

from __future__ import annotations

from typing import Any

import polars as pl
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from replay_assets.storage.apply import reading
from replay_assets.storage.capabilities import shared
from replay_assets.storage.publish import procedure, reverify
from replay_assets.storage.publish.reports import check_export
from replay_assets.storage.rules.published import AS_OF_HISTORY, ENTITIES
from replay_assets.storage.spark.frames import newest_per_key, to_polars
from replay_assets.storage.spark.gate import StoredSums
from replay_assets.storage.spark.unit import On, SparkSql, UnitBase


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


class SparkReports(On, shared.ReportReads):
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
        """A table for ``replay-assets export`` (``reports.check_export``: the same refusals)."""
        check_export(self.sql, name, as_of)
        if as_of is not None:
            return to_polars(consumer_frame(self.u, name, as_of).orderBy(*_CONSUMER[name][1]))
        return to_polars(export_frame(self.u, name))

    def reverify_state(self) -> procedure.Verdict:
        steps = StoredSums(self.u)

        def recomputed(day: str) -> str:
            # every date this engine certified stored its sums (``store_digest``)
            return steps.full_sums(day).content_sha256 if steps.stored_sums(day) is not None else ""

        return reverify.reverify_state(self.sql, recomputed=recomputed, controls=steps.recomputed_controls)


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
