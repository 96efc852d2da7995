"""The writes of one load-date application, each a set-based statement over the temporary
tables :func:`state_io.stage_fold` leaves (``_folded``, ``_committed``, ``_registry``)."""

from __future__ import annotations

import datetime as dt

import duckdb
import polars as pl

from replay_assets.core.errors import Violation
from replay_assets.core.fold import Outcome
from replay_assets.core.plan import DatePlan
from replay_assets.core.state import Counts
from replay_assets.core.status import PartitionStatus
from replay_assets.storage.apply import latest
from replay_assets.storage.apply.steps import counts_of
from replay_assets.storage.db.sql import DuckDBSql
from replay_assets.storage.db.warehouse import insert_frame, one, query_frame
from replay_assets.storage.evidence.written_once import EvidenceWriting
from replay_assets.storage.rules.apply import AFFECTED_GROUPS, GROUP_DATES, HISTORY_ROWS

VIOLATION = Outcome.VIOLATION.value


def _batches(plan: DatePlan) -> list[str]:
    return [b.batch_id for b in plan.batches]


def batch_counts(con: duckdb.DuckDBPyConnection, plan: DatePlan) -> dict[str, Counts]:
    """Reconciliation per batch (source events = accepted + rejected + skipped) from landing
    facts and the fold's outcomes."""
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
    tally = con.execute("SELECT batch_id, outcome, count(*) FROM _folded GROUP BY ALL").fetchall()
    return counts_of(_batches(plan), landed, rejected, {(b, o): int(n) for b, o, n in tally})


def violations(con: duckdb.DuckDBPyConnection, plan: DatePlan) -> pl.DataFrame:
    """Schema-gate violations found at landing plus the fold's contract violations."""
    gate = query_frame(
        con,
        """
        SELECT batch_id, source_file, line_number, event_id, rule, detail FROM batch_violations
        WHERE list_contains(?, batch_id) AND rule = ?""",
        [_batches(plan), Violation.UNSUPPORTED_SCHEMA_VERSION.value],
    )
    fold = query_frame(
        con,
        """
        SELECT batch_id, source_file, line_number, event_id, rule,
            rule || ' at event ' || event_id || ' (' || source_file || ' line ' || line_number || ')'
                AS detail
        FROM _folded WHERE outcome = ? ORDER BY pos""",
        [VIOLATION],
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
    EvidenceWriting(DuckDBSql(con)).insert_attempt(
        plan.load_date, plan.identity, status="BLOCKED", reason=reason, now=now
    )
    for b in blamed:
        source = next(d.source for d in plan.batches if d.batch_id == b)
        con.execute(
            "INSERT OR REPLACE INTO reconciliation ("
            "batch_id, source, load_date, source_events, accepted, rejected, skipped_duplicate, "
            "skipped_stale, status"
            ") VALUES (?, ?, ?, ?, 0, 0, 0, 0, 'BLOCKED')",
            [b, source, plan.load_date, counts[b].source_events],
        )
    EvidenceWriting(DuckDBSql(con)).set_status(
        "current_orders", keys=[plan.load_date], status=PartitionStatus.BLOCKED, reason=reason, now=now
    )


def same_history(con: duckdb.DuckDBPyConnection, day: str) -> bool:
    """Whether the folded winners are exactly the history rows the load date wrote."""
    for table, rows in HISTORY_ROWS.items():
        stored = f"SELECT * FROM {table} WHERE load_date = $day"
        differ = one(
            con,
            f"SELECT count(*) FROM (({stored} EXCEPT ALL {rows}) UNION ALL ({rows} EXCEPT ALL {stored}))",
            {"day": day},
        )
        if differ is None or differ[0]:
            return False
    return True


def affected_groups(con: duckdb.DuckDBPyConnection) -> list[str]:
    """The (business_date, store_id) groups the winners leave (their previous images) and join,
    into ``_groups``; returns the affected business dates."""
    con.execute("CREATE OR REPLACE TEMP TABLE _groups AS " + AFFECTED_GROUPS)
    return [str(r[0]) for r in con.execute(GROUP_DATES).fetchall()]


def undo_load_date(con: duckdb.DuckDBPyConnection, day: str, now: dt.datetime) -> None:
    """Before folding a load date again whole: its groups are re-queued, its writes removed."""
    con.execute(  # queued_at strictly increases: a group queued again is a new publication to make
        """UPDATE restatement_queue SET released_at = NULL,
                  queued_at = greatest(CAST(? AS TIMESTAMPTZ), queued_at + INTERVAL 1 MICROSECOND)
           WHERE load_date = ?""",
        [now, day],
    )
    latest.log_removal(con, day)
    for table in ("order_history", "customer_history", "event_registry"):
        con.execute(f"DELETE FROM {table} WHERE load_date = ?", [day])
    latest.retract(con, day)


def write_history(con: duckdb.DuckDBPyConnection, day: str) -> int:
    """The winners as history rows of the load date; returns the rows written."""
    written = 0
    for table, rows in HISTORY_ROWS.items():
        inserted = con.execute(f"INSERT INTO {table} {rows}", {"day": day}).fetchall()
        written += int(inserted[0][0]) if inserted else 0
    return written


def candidate_rows(con: duckdb.DuckDBPyConnection, day: str) -> pl.DataFrame:
    """The history rows a candidate would write (kept as Parquet when it fails the gate)."""
    orders, customers = (query_frame(con, rows, {"day": day}) for rows in HISTORY_ROWS.values())
    return pl.concat([orders, customers], how="diagonal")


def register_events(con: duckdb.DuckDBPyConnection, day: str) -> None:
    """Remember every event id the load date carried, so a replay is a duplicate: the events the
    fold found carrying a new id (``new_id``: neither registered nor carried by an earlier event
    of the load date), each with its source_seq and content. Called only for a load date without
    violations (a blocked date registers nothing), so each id's first event is one to register.
    A set-based filter: numbering each id's events to keep the first and anti-joining the
    registry was markedly slower at volume."""
    con.execute(
        """
        INSERT INTO event_registry (source, event_id, source_seq, content_sha256, load_date)
        SELECT source, event_id, source_seq, content_sha256, ? FROM _folded WHERE new_id AND outcome <> ?""",
        [day, VIOLATION],
    )


def queue_groups(con: duckdb.DuckDBPyConnection, dates: list[str], day: str, now: dt.datetime) -> int:
    """Durably queue the affected groups of ``_groups``, old and new images; returns their number."""
    con.execute(
        """
        INSERT INTO restatement_queue (business_date, store_id, load_date, queued_at, released_at)
        SELECT business_date, store_id, ?, ?, NULL FROM _groups
        ON CONFLICT (business_date, store_id, load_date)
        DO UPDATE SET released_at = NULL, queued_at = greatest(
            excluded.queued_at, restatement_queue.queued_at + INTERVAL 1 MICROSECOND)""",
        [day, now],
    )
    if dates:
        EvidenceWriting(DuckDBSql(con)).set_status(
            "daily_aggregates",
            keys=dates,
            status=PartitionStatus.PENDING_RESTATEMENT,
            reason=f"load date {day} changed this business date",
            now=now,
        )
    counted = one(con, "SELECT count(*) FROM _groups")
    return int(counted[0]) if counted else 0


def advance_watermarks(con: duckdb.DuckDBPyConnection, plan: DatePlan, day: str) -> None:
    """Monotone per source: the declared slice high, or the highest committed source_seq."""
    seen = con.execute(
        "SELECT source, max(source_seq) FROM _folded WHERE outcome <> ? GROUP BY 1", [VIOLATION]
    ).fetchall()
    highest = dict(seen)
    for source in sorted({d.source for d in plan.batches}):
        declared = one(
            con,
            "SELECT max(seq_high) FROM manifests WHERE list_contains(?, batch_id) AND source = ?",
            [_batches(plan), source],
        )
        candidates = [v for v in (declared[0] if declared else None, highest.get(source)) if v is not None]
        if candidates:
            con.execute(
                """INSERT INTO watermarks (source, watermark, load_date)
                VALUES (?, ?, ?) ON CONFLICT (source) DO UPDATE
                SET watermark = greatest(watermarks.watermark, excluded.watermark),
                    load_date = excluded.load_date""",
                [source, max(candidates), day],
            )
