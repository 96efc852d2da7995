"""Publishing daily aggregates on Delta: the Spark adapter's steps (``storage/publish/steps.py``)
of the one procedure (``publish/procedure.py``). The candidates and the gate's recomputation are
the shared statements (``rules/aggregates.py``) rendered for Spark over the state as of the
certified pointer (the latest tables when they hold it): no order line comes to the client."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from pathlib import Path

import polars as pl
from pyspark.sql import functions as F

from replay_assets.core.gate import CheckOutcome, failures
from replay_assets.core.status import PartitionStatus
from replay_assets.storage.apply import latest, reading
from replay_assets.storage.evidence.written_once import EvidenceWriting
from replay_assets.storage.publish import recording as publish_recording
from replay_assets.storage.publish import verdicts
from replay_assets.storage.rules import by_change
from replay_assets.storage.rules.aggregates import SQL_AGGREGATES_BY_ORDER, candidate_aggregates
from replay_assets.storage.rules.sql import on_sql
from replay_assets.storage.rules.tables import RECON_COLUMNS
from replay_assets.storage.spark.dialect import over_tables
from replay_assets.storage.spark.frames import to_polars
from replay_assets.storage.spark.unit import On, SparkSql, UnitBase

_QUEUE_KEY = ("business_date", "store_id", "load_date")


class SparkCandidateSteps(On):
    def certified_pointer(self) -> str | None:
        return reading.certified_pointer(self.sql)

    latest_holds_as_of = on_sql(latest.holds_as_of)

    certified_load_dates = on_sql(reading.certified_load_dates)

    def recomputed_aggregates(self, dates: list[str], *, as_of: str, from_latest: bool) -> pl.DataFrame:
        """The gate's recomputation (``SQL_AGGREGATES_BY_ORDER``) over the latest tables, or else
        over each key's newest history row up to ``as_of`` (``by_change.as_of``)."""
        newest = by_change.as_of("order_history", ("order_id", "line_no"), "load_date <= $as_of")
        state = "order_latest" if from_latest else f"({newest}) s"
        args: dict[str, object] = {"dates": dates} if from_latest else {"dates": dates, "as_of": as_of}
        return to_polars(self.u.sql(over_tables(SQL_AGGREGATES_BY_ORDER.format(state=state)), **args))

    def applied_reconciliation(self, as_of: str) -> pl.DataFrame:
        applied = self.u.frame("reconciliation").where(
            (F.col("status") == F.lit("APPLIED")) & (F.col("load_date") <= F.lit(as_of))
        )
        return to_polars(applied.select(list(RECON_COLUMNS)))

    first_applied = on_sql(reading.first_applied)

    def candidate_aggregates(self, dates: list[str], *, as_of: str, from_latest: bool) -> pl.DataFrame:
        """The candidate aggregates of ``dates`` as of ``as_of`` by the shared statement
        (``rules.aggregates.candidate_aggregates``): only one row per store and date comes here."""
        sql = candidate_aggregates("order_latest" if from_latest else None, "order_history")
        args: dict[str, object] = {"dates": dates} if from_latest else {"dates": dates, "as_of": as_of}
        return to_polars(self.u.sql(over_tables(sql), **args))


class SparkPublicationWrites(On):
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
        """Keep a failed candidate inspectable while the last certified version stays visible."""
        path = verdicts.keep_candidate(home, asset=asset, key=key, digest=digest, rows=rows)
        reason = failures(outcomes)
        row = {
            "asset": asset,
            "partition_key": key,
            "as_of_load_date": as_of,
            "content_sha256": digest,
            "checks": verdicts.checks_json(outcomes),
            "reason": reason,
            "created_at": now,
            "run_id": run_id,
            "rows_path": str(path),
            "rows_bytes": path.stat().st_size,
        }
        self.u.append("candidates", [row])
        EvidenceWriting(SparkSql(self.u)).set_status(
            asset, keys=[key], status=PartitionStatus.FAILED_CANDIDATE, reason=reason, now=now
        )
        return path

    last_publications = on_sql(publish_recording.last_publications)
    record_publications = on_sql(publish_recording.record_publications)

    def insert_aggregate_versions(self, versions: pl.DataFrame) -> None:
        self.u.append_frames("aggregate_versions", [versions])

    def release_queue(self, days: list[str], *, as_of: str, now: dt.datetime, run_id: str | None) -> None:
        """The queued groups of ``days`` up to ``as_of`` are published: released by this run."""
        queued = self.u.frame("restatement_queue").where(
            F.col("business_date").isin(days)
            & (F.col("load_date") <= F.lit(as_of))
            & F.col("released_at").isNull()
        )
        keys = to_polars(queued.select(list(_QUEUE_KEY)))
        released = keys.with_columns(
            pl.lit(now).alias("released_at"), pl.lit(run_id, pl.String).alias("released_by")
        )
        on = " AND ".join(f"t.{c} = s.{c}" for c in _QUEUE_KEY)
        self.u.merge_rows(
            "restatement_queue",
            released,
            f"MERGE INTO {{target}} t USING {{source}} s ON {on} "
            "WHEN MATCHED THEN UPDATE SET released_at = s.released_at, released_by = s.released_by",
            matches=_QUEUE_KEY,
        )


class SparkPublishSteps:
    def __init__(self, u: UnitBase) -> None:
        self.candidates = SparkCandidateSteps(u)
        self.publications = SparkPublicationWrites(u)
