"""The writes of one load-date application, each a small set-based statement."""

from __future__ import annotations

import datetime as dt

import duckdb
import polars as pl

from replay_assets.core.errors import Violation
from replay_assets.core.events import ORDER_IMAGE
from replay_assets.core.fold import Outcome
from replay_assets.core.plan import DatePlan
from replay_assets.core.state import Counts
from replay_assets.storage.landing import insert_frame
from replay_assets.storage.migrations import ORDER_COLUMNS
from replay_assets.storage.status import Status, set_status
from replay_assets.storage.warehouse import one, query_frame

BUSINESS_FIELDS = tuple(c for c in ORDER_IMAGE if c not in ("order_id", "line_no", "status"))
VIOLATION = Outcome.VIOLATION.value


def _batches(plan: DatePlan) -> list[str]:
    return [b.batch_id for b in plan.batches]


def batch_counts(con: duckdb.DuckDBPyConnection, plan: DatePlan, folded: pl.DataFrame) -> dict[str, Counts]:
    """Reconciliation per batch (SPEC 3.5) from landing facts and the fold's outcomes."""
    landed = dict(
        con.execute(
            "SELECT batch_id, source_events FROM manifests WHERE list_contains(?, batch_id)", [_batches(plan)]
        ).fetchall()
    )
    rejected = dict(
        con.execute(
            "SELECT batch_id, count(*) FROM rejected_events WHERE list_contains(?, batch_id) GROUP BY 1",
            [_batches(plan)],
        ).fetchall()
    )
    tally = folded.group_by("batch_id", "outcome").len()
    outcome = {(r["batch_id"], r["outcome"]): r["len"] for r in tally.iter_rows(named=True)}
    return {
        b: Counts(
            int(landed.get(b, 0)),
            outcome.get((b, Outcome.ACCEPTED.value), 0),
            int(rejected.get(b, 0)),
            outcome.get((b, Outcome.DUPLICATE.value), 0),
            outcome.get((b, Outcome.STALE.value), 0),
        )
        for b in _batches(plan)
    }


def violations(con: duckdb.DuckDBPyConnection, plan: DatePlan, folded: pl.DataFrame) -> pl.DataFrame:
    """Schema-gate violations found at landing plus the fold's contract violations."""
    gate = query_frame(
        con,
        """
        SELECT batch_id, source_file, line_number, event_id, rule, detail FROM batch_violations
        WHERE list_contains(?, batch_id) AND rule = ?""",
        [_batches(plan), Violation.UNSUPPORTED_SCHEMA_VERSION.value],
    )
    fold = folded.filter(pl.col("outcome") == VIOLATION).select(
        "batch_id",
        "source_file",
        "line_number",
        "event_id",
        "rule",
        pl.format("{} at event {} ({} line {})", "rule", "event_id", "source_file", "line_number").alias(
            "detail"
        ),
    )
    return pl.concat([gate.cast(fold.schema), fold]) if gate.height else fold


def record_blocked(
    con: duckdb.DuckDBPyConnection,
    plan: DatePlan,
    found: pl.DataFrame,
    counts: dict[str, Counts],
    now: dt.datetime,
) -> None:
    """Evidence of a blocked load date; nothing of the date is applied."""
    con.execute(
        "DELETE FROM batch_violations WHERE list_contains(?, batch_id) AND rule <> ?",
        [_batches(plan), Violation.UNSUPPORTED_SCHEMA_VERSION.value],
    )
    fold = found.filter(pl.col("rule") != Violation.UNSUPPORTED_SCHEMA_VERSION.value)
    insert_frame(
        con,
        "batch_violations",
        fold.with_columns(pl.lit(plan.load_date).alias("load_date"), pl.lit(now).alias("detected_at")),
    )
    blamed = sorted(set(found["batch_id"].to_list()))
    reason = f"batch {blamed[0]}: {found['detail'][0]}"
    con.execute(
        "INSERT INTO load_date_attempts VALUES (?, ?, 'BLOCKED', ?, ?)",
        [plan.load_date, plan.identity, reason, now],
    )
    for b in blamed:
        source = next(d.source for d in plan.batches if d.batch_id == b)
        con.execute(
            "INSERT OR REPLACE INTO reconciliation VALUES (?, ?, ?, ?, 0, 0, 0, 0, 'BLOCKED')",
            [b, source, plan.load_date, counts[b].source_events],
        )
    set_status(con, "current_orders", [plan.load_date], Status.BLOCKED, reason, now)


def history_frames(winners: pl.DataFrame, day: str) -> tuple[pl.DataFrame, pl.DataFrame]:
    """History rows (one per changed key) in table column order, sorted by key."""
    deleted = pl.col("op") == "delete"
    orders = (
        winners.filter(pl.col("entity") == "order_line")
        .with_columns(
            *[pl.when(deleted).then(None).otherwise(pl.col(c)).alias(c) for c in BUSINESS_FIELDS],
            pl.when(deleted).then(pl.lit("deleted")).otherwise(pl.col("status")).alias("status"),
            pl.lit(day).alias("load_date"),
        )
        .select(*ORDER_COLUMNS, "version", "source_seq", "image_sha256", "load_date")
        .sort("order_id", "line_no")
    )
    customers = (
        winners.filter(pl.col("entity") == "customer")
        .with_columns(
            *[pl.when(deleted).then(None).otherwise(pl.col(c)).alias(c) for c in ("name", "segment")],
            pl.when(deleted).then(pl.lit("deleted")).otherwise(pl.lit("active")).alias("status"),
            pl.lit(day).alias("load_date"),
        )
        .select(
            "customer_id", "name", "segment", "status", "version", "source_seq", "image_sha256", "load_date"
        )
        .sort("customer_id")
    )
    return orders, customers


def new_groups(winners: pl.DataFrame) -> pl.DataFrame:
    return winners.filter((pl.col("entity") == "order_line") & (pl.col("op") == "upsert")).select(
        "business_date", "store_id"
    )


def undo_load_date(con: duckdb.DuckDBPyConnection, day: str, now: dt.datetime) -> None:
    """Before folding a load date again whole: its groups are re-queued, its writes removed."""
    con.execute(
        "UPDATE restatement_queue SET released_at = NULL, queued_at = ? WHERE load_date = ?", [now, day]
    )
    for table in ("order_history", "customer_history", "event_registry"):
        con.execute(f"DELETE FROM {table} WHERE load_date = ?", [day])


def write_history(con: duckdb.DuckDBPyConnection, orders: pl.DataFrame, customers: pl.DataFrame) -> None:
    if orders.height:
        insert_frame(con, "order_history", orders)
    if customers.height:
        insert_frame(con, "customer_history", customers)


def register_events(
    con: duckdb.DuckDBPyConnection, folded: pl.DataFrame, registry: pl.DataFrame, day: str
) -> None:
    """Remember every event id the load date carried, so a replay is a duplicate."""
    fresh = (
        folded.filter(pl.col("outcome") != VIOLATION)
        .sort("pos")
        .unique(["source", "event_id"], keep="first")
        .join(registry.select("source", "event_id"), on=["source", "event_id"], how="anti")
        .select("source", "event_id", "source_seq", "content_sha256", pl.lit(day).alias("load_date"))
    )
    if fresh.height:
        insert_frame(con, "event_registry", fresh)


def queue_groups(con: duckdb.DuckDBPyConnection, groups: pl.DataFrame, day: str, now: dt.datetime) -> None:
    """Durably queue the affected (business_date, store_id) groups, old and new images."""
    if not groups.height:
        return
    con.register("_groups", groups)
    try:
        con.execute(
            """
            INSERT INTO restatement_queue
            SELECT business_date, store_id, ?, ?, NULL FROM _groups
            ON CONFLICT (business_date, store_id, load_date)
            DO UPDATE SET released_at = NULL, queued_at = excluded.queued_at""",
            [day, now],
        )
    finally:
        con.unregister("_groups")
    dates = sorted(set(groups["business_date"].to_list()))
    set_status(
        con,
        "daily_aggregates",
        dates,
        Status.PENDING_RESTATEMENT,
        f"load date {day} changed this business date",
        now,
    )


def advance_watermarks(
    con: duckdb.DuckDBPyConnection, plan: DatePlan, folded: pl.DataFrame, day: str
) -> None:
    """Monotone per source: the declared slice high, or the highest committed source_seq."""
    seen = folded.filter(pl.col("outcome") != VIOLATION).group_by("source").agg(pl.col("source_seq").max())
    highest = dict(seen.iter_rows())
    for source in sorted({d.source for d in plan.batches}):
        declared = one(
            con,
            "SELECT max(seq_high) FROM manifests WHERE list_contains(?, batch_id) AND source = ?",
            [_batches(plan), source],
        )
        candidates = [v for v in (declared[0] if declared else None, highest.get(source)) if v is not None]
        if candidates:
            con.execute(
                """INSERT INTO watermarks VALUES (?, ?, ?) ON CONFLICT (source) DO UPDATE
                SET watermark = greatest(watermarks.watermark, excluded.watermark),
                    load_date = excluded.load_date""",
                [source, max(candidates), day],
            )


def write_reconciliation(
    con: duckdb.DuckDBPyConnection, plan: DatePlan, counts: dict[str, Counts], status: str
) -> None:
    for d in plan.batches:
        c = counts[d.batch_id]
        con.execute(
            "INSERT OR REPLACE INTO reconciliation VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                d.batch_id,
                d.source,
                plan.load_date,
                c.source_events,
                c.accepted,
                c.rejected,
                c.skipped_duplicate,
                c.skipped_stale,
                status,
            ],
        )
