"""Applying a load date on Delta: the Spark adapter's steps (``storage/apply/steps.py``) that stage
the fold and write what it decided, and the apply port's writes. Each step is the DuckDB step's
statement (``storage/apply``) in Spark SQL over the unit's tables at its head, with the same rule
(its DuckDB docstring says which). The fold's staging is kept in scratch Delta tables the engine
writes and reads back (``UnitBase.kept``; no row comes to this process): a Spark Connect plan is
analysed again at every action, so a view over the tables would otherwise change under the steps
that write them. The latest tables' steps are in ``latest.py``, the gate's in ``gate.py``.
"""

from __future__ import annotations

import datetime as dt

import polars as pl
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from replay_assets.core.errors import Violation
from replay_assets.core.fold import Outcome
from replay_assets.core.plan import DatePlan
from replay_assets.core.state import Counts
from replay_assets.core.status import PartitionStatus
from replay_assets.storage.apply import reading, recording
from replay_assets.storage.apply.load_date import ApplyResult, apply_load_date
from replay_assets.storage.apply.steps import counts_of
from replay_assets.storage.evidence.written_once import EvidenceWriting
from replay_assets.storage.publish import recording as publish_recording
from replay_assets.storage.rules.apply import AFFECTED_GROUPS, GROUP_DATES, HISTORY_ROWS
from replay_assets.storage.rules.sql import on_sql
from replay_assets.storage.spark import schema
from replay_assets.storage.spark.dialect import shared
from replay_assets.storage.spark.facts import ApplyReading
from replay_assets.storage.spark.fold import fold
from replay_assets.storage.spark.frames import to_polars
from replay_assets.storage.spark.gate import SparkGateSteps
from replay_assets.storage.spark.latest import advance_latest, log_removal, retract_latest
from replay_assets.storage.spark.stepbase import (
    DELETE_DAY,
    append_from_engine,
    cast_to,
    keep,
    latest_holds_before,
    local_view,
)
from replay_assets.storage.spark.unit import On, SparkSql, UnitBase

VIOLATION = Outcome.VIOLATION.value
_STAGED = ("_batches", "_events", "_committed", "_registry", "_folded", "_groups")


class SparkFoldSteps(On):
    applied_identity = on_sql(reading.applied_identity)
    newest_applied = on_sql(reading.newest_applied)
    record_applied = on_sql(recording.record_applied)

    def stage_fold(self, batches: list[str], load_date: str) -> None:
        """``_events`` (numbered in application order: batch order, file, line), ``_committed``,
        ``_registry``, then ``_folded``: the DuckDB adapter's ``stage.py`` on this engine."""
        local_view(self.u, "_batches", pl.DataFrame({"batch_id": batches, "n": list(range(len(batches)))}))
        events = self.u.sql(
            """SELECT s.*, row_number() OVER (ORDER BY b.n, s.source_file, s.line_number) AS pos
            FROM {staged_events} s JOIN _batches b ON b.batch_id = s.batch_id WHERE s.load_date = :day""",
            day=load_date,
        )
        keep(self.u, "_events", events)
        keep(
            self.u,
            "_committed",
            self.u.sql(_committed_sql(latest_holds_before(self.u, load_date)), day=load_date),
        )
        registry = """SELECT r.source, r.event_id, r.source_seq, r.content_sha256 FROM {event_registry} r
            LEFT SEMI JOIN _events i ON i.source = r.source AND i.{key} = r.{key} WHERE r.load_date < :day"""
        keep(
            self.u,
            "_registry",
            self.u.sql(registry.replace("{key}", "event_id"), day=load_date)
            .union(self.u.sql(registry.replace("{key}", "source_seq"), day=load_date))
            .distinct(),  # SQL's UNION, as DuckDB's stage has it: a row matched both ways once
        )
        # a view, not kept: it reads only the kept views above, and ``_folded`` is its one reader
        fold(self.spark).createOrReplaceTempView("_fold")
        keep(
            self.u,
            "_folded",
            self.spark.sql(
                "SELECT e.*, f.outcome, f.rule, f.winner FROM _events e JOIN _fold f ON f.pos = e.pos"
            ),
        )

    def drop_fold(self) -> None:
        staged = {*_STAGED, "_fold"}
        for view in self.spark.catalog.listTables():
            if view.name in staged and view.isTemporary:
                self.spark.catalog.dropTempView(view.name)

    def batch_counts(self, plan: DatePlan) -> dict[str, Counts]:
        batches = [b.batch_id for b in plan.batches]
        manifests = self.u.frame("manifests").where(F.col("batch_id").isin(batches))
        landed = {r["batch_id"]: r["source_events"] for r in self.u.rows(manifests)}
        rejected_rows = (
            self.u.frame("rejected_events").where(F.col("batch_id").isin(batches)).groupBy("batch_id")
        )
        rejected = {r["batch_id"]: r["count"] for r in self.u.rows(rejected_rows.count())}
        tally = self.u.rows(self.spark.table("_folded").groupBy("batch_id", "outcome").count())
        outcomes = {(r["batch_id"], r["outcome"]): int(r["count"]) for r in tally}
        return counts_of(batches, landed, rejected, outcomes)

    def violations(self, plan: DatePlan) -> pl.DataFrame:
        """Schema-gate violations found at landing plus the fold's contract violations."""
        columns = ["batch_id", "source_file", "line_number", "event_id", "rule", "detail"]
        gate = self.u.frame("batch_violations").where(
            F.col("batch_id").isin([b.batch_id for b in plan.batches])
            & (F.col("rule") == F.lit(Violation.UNSUPPORTED_SCHEMA_VERSION.value))
        )
        parts = ["rule", " at event ", "event_id", " (", "source_file", " line ", "line_number", ")"]
        detail = F.concat(*[F.col(p).cast("string") if p in columns else F.lit(p) for p in parts])
        folded = self.spark.table("_folded").where(F.col("outcome") == F.lit(VIOLATION))
        # Sail 0.7 sorts only by a column the projection keeps
        ordered = folded.withColumn("detail", detail).select([*columns, "pos"]).orderBy("pos")
        fold_rows = to_polars(ordered).drop("pos")
        gate_rows = to_polars(gate.select(columns))
        return pl.concat([gate_rows.cast(fold_rows.schema), fold_rows]) if gate_rows.height else fold_rows

    def record_blocked(
        self, plan: DatePlan, found: pl.DataFrame, counts: dict[str, Counts], now: dt.datetime
    ) -> None:
        """Evidence of a blocked load date (``writes.record_blocked``); nothing of it is applied."""
        gate = Violation.UNSUPPORTED_SCHEMA_VERSION.value
        earlier = self.u.frame("batch_violations").where(
            F.col("batch_id").isin([b.batch_id for b in plan.batches]) & (F.col("rule") != F.lit(gate))
        )  # a blocked date's fold violations found before: replaced by this fold's
        self.u.merge_frame(
            "batch_violations",
            self.u.local(to_polars(earlier.select("batch_id", "rule").distinct()).to_arrow()),
            "MERGE INTO {target} t USING {source} s ON t.batch_id = s.batch_id AND t.rule = s.rule "
            "WHEN MATCHED THEN DELETE",
            matches=("batch_id", "rule"),
        )
        fold = found.filter(pl.col("rule") != gate)
        stamped = fold.with_columns(
            pl.lit(plan.load_date).alias("load_date"), pl.lit(now).alias("detected_at")
        )
        self.u.append_frames("batch_violations", [stamped])
        blamed = sorted(set(found["batch_id"].to_list()))
        reason = f"batch {blamed[0]}: {found['detail'][0]}"
        evidence = EvidenceWriting(SparkSql(self.u))
        evidence.insert_attempt(plan.load_date, plan.identity, status="BLOCKED", reason=reason, now=now)
        sources = {d.batch_id: d.source for d in plan.batches}
        zero = {"accepted": 0, "rejected": 0, "skipped_duplicate": 0, "skipped_stale": 0}
        rows = [
            {
                "batch_id": b,
                "source": sources[b],
                "load_date": plan.load_date,
                "source_events": counts[b].source_events,
                **zero,
                "status": "BLOCKED",
            }
            for b in blamed
        ]
        update = [c for c in schema.schemas()["reconciliation"].names if c != "batch_id"]
        self.u.merge("reconciliation", rows, on=("batch_id",), update=update)
        evidence.set_status(
            "current_orders", keys=[plan.load_date], status=PartitionStatus.BLOCKED, reason=reason, now=now
        )

    def same_history(self, day: str) -> bool:
        """Whether the folded winners are exactly the history rows the load date wrote."""
        for table, rows in history_frames(self.u, day).items():
            folded = cast_to(table, rows)
            stored = self.u.frame(table).where(F.col("load_date") == F.lit(day)).select(*folded.columns)
            if stored.exceptAll(folded).limit(1).collect() or folded.exceptAll(stored).limit(1).collect():
                return False  # compared in the engine, as multisets: no row comes to this process
        return True

    def undo_load_date(self, day: str, now: dt.datetime) -> None:
        """Before folding a load date again whole: its groups are re-queued, its writes removed
        (``writes.undo_load_date``)."""
        queued = pl.DataFrame({"load_date": [day], "queued_at": [now]})
        self.u.merge_rows(
            "restatement_queue",
            queued,
            """MERGE INTO {target} t USING {source} s ON t.load_date = s.load_date
            WHEN MATCHED THEN UPDATE SET released_at = NULL,
                queued_at = greatest(s.queued_at, timestamp_micros(unix_micros(t.queued_at) + 1))""",
            matches=("load_date",),
        )
        log_removal(self.u, day)
        gone = self.u.local(pl.DataFrame({"load_date": [day]}).to_arrow())
        for table in ("order_history", "customer_history", "event_registry"):
            self.u.merge_frame(table, gone, DELETE_DAY, matches=("load_date",))
        retract_latest(self.u, day)


class SparkStateWrites(On):
    def affected_groups(self) -> list[str]:
        """The (business_date, store_id) groups the winners leave and join, into ``_groups``."""
        keep(self.u, "_groups", shared(self.spark, AFFECTED_GROUPS))
        return [str(r["business_date"]) for r in self.u.rows(shared(self.spark, GROUP_DATES))]

    def write_history(self, day: str) -> int:
        """The winners as history rows of the load date; returns the rows written."""
        written = 0
        for table, rows in history_frames(self.u, day).items():
            written += append_from_engine(self.u, table, rows)
        return written

    def register_events(self, day: str) -> None:
        """Every event id the load date carried, first by position, unless registered before."""
        first = self.spark.sql(
            """SELECT source, event_id, source_seq, content_sha256 FROM (
                SELECT *, row_number() OVER (PARTITION BY source, event_id ORDER BY pos) AS n
                FROM _folded WHERE outcome <> :violation) f
            LEFT ANTI JOIN _registry r USING (source, event_id) WHERE n = 1""",
            args={"violation": VIOLATION},
        )
        append_from_engine(self.u, "event_registry", first.withColumn("load_date", F.lit(day)))

    def queue_groups(self, dates: list[str], day: str, now: dt.datetime) -> int:
        """Durably queue the affected groups; a group queued again is released no more and its
        ``queued_at`` strictly increases (a new publication to make)."""
        groups = to_polars(self.spark.table("_groups"))
        if groups.height:
            rows = groups.with_columns(pl.lit(day).alias("load_date"), pl.lit(now).alias("queued_at"))
            self.u.merge_rows(
                "restatement_queue",
                rows,
                """MERGE INTO {target} t USING {source} s
                ON t.business_date = s.business_date AND t.store_id = s.store_id AND t.load_date = s.load_date
                WHEN MATCHED THEN UPDATE SET released_at = NULL,
                    queued_at = greatest(s.queued_at, timestamp_micros(unix_micros(t.queued_at) + 1))
                WHEN NOT MATCHED THEN INSERT *""",
            )
        if dates:
            EvidenceWriting(SparkSql(self.u)).set_status(
                "daily_aggregates",
                keys=dates,
                status=PartitionStatus.PENDING_RESTATEMENT,
                reason=f"load date {day} changed this business date",
                now=now,
            )
        return groups.height

    def advance_watermarks(self, plan: DatePlan, day: str) -> None:
        """Monotone per source: the declared slice high, or the highest committed source_seq."""
        seen = self.spark.table("_folded").where(F.col("outcome") != F.lit(VIOLATION))
        highest = {
            r["source"]: r["m"]
            for r in self.u.rows(seen.groupBy("source").agg(F.max("source_seq").alias("m")))
        }
        manifests = self.u.frame("manifests").where(
            F.col("batch_id").isin([b.batch_id for b in plan.batches])
        )
        declared = {
            r["source"]: r["m"]
            for r in self.u.rows(manifests.groupBy("source").agg(F.max("seq_high").alias("m")))
        }
        for source in sorted({d.source for d in plan.batches}):
            candidates = [v for v in (declared.get(source), highest.get(source)) if v is not None]
            if candidates:
                row = pl.DataFrame({"source": [source], "watermark": [max(candidates)], "load_date": [day]})
                self.u.merge_rows(
                    "watermarks",
                    row,
                    """MERGE INTO {target} t USING {source} s ON t.source = s.source
                    WHEN MATCHED THEN UPDATE SET watermark = greatest(t.watermark, s.watermark),
                        load_date = s.load_date
                    WHEN NOT MATCHED THEN INSERT *""",
                )

    write_reconciliation = on_sql(recording.write_reconciliation)

    def candidate_rows(self, day: str) -> pl.DataFrame:
        """The history rows a candidate would write (kept as Parquet when it fails the gate)."""
        found = [
            to_polars(shared(self.spark, HISTORY_ROWS[t], {"day": day}))
            for t in ("order_history", "customer_history")
        ]
        return pl.concat(found, how="diagonal")

    def advance_latest(self, day: str) -> None:
        advance_latest(self.u, day)

    def latest_holds_before(self, day: str) -> bool:
        return latest_holds_before(self.u, day)


def history_frames(u: UnitBase, day: str) -> dict[str, DataFrame]:
    """The winners as the history rows of ``day``, by table, as the engine's frames (the shared
    history-row statements): a delete is a tombstone (no image, status ``deleted``)."""
    return {
        table: shared(u.spark, rows, {"day": day}).select(*schema.schemas()[table].names)
        for table, rows in HISTORY_ROWS.items()
    }


def _committed_sql(from_latest: bool) -> str:
    """Each touched key's state before the load date (``stage._committed_sql`` on this engine):
    from the latest tables when they hold it, else each key's newest history row before it."""
    orders, customers = (
        ("{order_latest}", "{customer_latest}") if from_latest else ("{order_history}", "{customer_history}")
    )
    order_key = "concat('[\"', h.order_id, '\",', CAST(h.line_no AS STRING), ']')"
    customer_key = "concat('[\"', h.customer_id, '\"]')"

    def newest(source: str, keys: str, on: str) -> str:
        semi = f"{source} h LEFT SEMI JOIN _events k ON {on}"
        if from_latest:
            return semi
        return f"""(SELECT * FROM (
            SELECT h.*, row_number() OVER (PARTITION BY {keys} ORDER BY h.load_date DESC) AS n
            FROM {semi} WHERE h.load_date < :day) WHERE n = 1) h"""

    order_on = "k.entity = 'order_line' AND h.order_id = k.order_id AND h.line_no = k.line_no"
    customer_on = "k.entity = 'customer' AND h.customer_id = k.customer_id"
    return f"""SELECT 'order_line' AS entity, {order_key} AS key, h.version, h.image_sha256,
            h.business_date, h.store_id
        FROM {newest(orders, "h.order_id, h.line_no", order_on)}
        UNION ALL
        SELECT 'customer', {customer_key}, h.version, h.image_sha256,
            CAST(NULL AS STRING), CAST(NULL AS STRING)
        FROM {newest(customers, "h.customer_id", customer_on)}"""


class SparkApplySteps:
    """Every step of applying a load date on Delta (``storage/apply/steps.py``), by stage."""

    def __init__(self, u: UnitBase) -> None:
        self.fold = SparkFoldSteps(u)
        self.writes = SparkStateWrites(u)
        self.gate = SparkGateSteps(u)


class ApplyWriting(ApplyReading):
    record_attempt = on_sql(recording.record_attempt)

    def apply_load_date(
        self,
        plan: DatePlan,
        *,
        first_date: str,
        run_id: str | None,
        now: dt.datetime,
        sealed_ok: bool = False,
        restate: bool = False,
    ) -> ApplyResult:
        steps = SparkApplySteps(self.u)
        return apply_load_date(
            steps, plan, first_date=first_date, run_id=run_id, now=now, sealed_ok=sealed_ok, restate=restate
        )

    def undo_load_date(self, day: str, now: dt.datetime) -> None:
        SparkFoldSteps(self.u).undo_load_date(day, now)

    certify_state = on_sql(publish_recording.certify_state)
    write_snapshot = on_sql(recording.write_snapshot)
