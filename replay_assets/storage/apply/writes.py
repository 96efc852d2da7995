"""The writes of one load-date application, written once for both engines over the unit's ``Sql``:
set-based statements over the relations the staged fold leaves (``_folded``, ``_committed``,
``_registry``), and the small records its outcome adds up to. A row that comes to this process
is a count, a key or a violation; the state only as the candidate rows a failed gate keeps."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import polars as pl

from replay_assets.core.errors import Violation
from replay_assets.core.fold import Outcome
from replay_assets.core.plan import DatePlan
from replay_assets.core.state import Counts
from replay_assets.core.status import PartitionStatus
from replay_assets.storage.apply import latest
from replay_assets.storage.apply.recording import write_reconciliation
from replay_assets.storage.apply.steps import counts_of
from replay_assets.storage.evidence.written_once import EvidenceWriting
from replay_assets.storage.rules.apply import AFFECTED_GROUPS, GROUP_DATES, HISTORY_ROWS
from replay_assets.storage.rules.schema import columns as table_columns
from replay_assets.storage.rules.sql import Sql

VIOLATION = Outcome.VIOLATION.value
GATE = Violation.UNSUPPORTED_SCHEMA_VERSION.value
_VIOLATION_COLUMNS = pl.Schema(
    {
        "batch_id": pl.String,
        "source_file": pl.String,
        "line_number": pl.Int64,
        "event_id": pl.String,
        "rule": pl.String,
        "detail": pl.String,
    }
)
# a group, or a whole load date, queued again: released no more, and its ``queued_at`` strictly
# later than before (a new publication to make)
_ONE_TICK = dt.timedelta(microseconds=1)


def _batches(plan: DatePlan) -> list[str]:
    return [b.batch_id for b in plan.batches]


def batch_counts(sql: Sql, plan: DatePlan) -> dict[str, Counts]:
    """Reconciliation per batch (source events = accepted + rejected + skipped) from landing
    facts and the fold's outcomes."""
    batches = _batches(plan)
    landed = sql.rows(
        "SELECT batch_id, source_events FROM manifests WHERE list_contains($batches, batch_id)",
        batches=batches,
    )
    rejected = sql.rows(
        """SELECT batch_id, count(*) AS n FROM rejected_events WHERE list_contains($batches, batch_id)
        GROUP BY batch_id""",
        batches=batches,
    )
    tally = sql.rows("SELECT batch_id, outcome, count(*) AS n FROM _folded GROUP BY batch_id, outcome")
    return counts_of(
        batches,
        {r["batch_id"]: r["source_events"] for r in landed},
        {r["batch_id"]: r["n"] for r in rejected},
        {(r["batch_id"], r["outcome"]): int(r["n"]) for r in tally},
    )


def violations(sql: Sql, plan: DatePlan) -> pl.DataFrame:
    """Schema-gate violations found at landing plus the fold's contract violations, in order."""
    gate = sql.frame(
        """SELECT batch_id, source_file, line_number, event_id, rule, detail FROM batch_violations
        WHERE list_contains($batches, batch_id) AND rule = $gate""",
        batches=_batches(plan),
        gate=GATE,
    )
    fold = sql.frame(  # ordered by a column it keeps: Sail 0.7 sorts by no other
        """SELECT batch_id, source_file, line_number, event_id, rule,
            rule || ' at event ' || event_id || ' (' || source_file || ' line '
                || CAST(line_number AS VARCHAR) || ')' AS detail, pos
        FROM _folded WHERE outcome = $violation ORDER BY pos""",
        violation=VIOLATION,
    )
    found = pl.concat([gate.cast(_VIOLATION_COLUMNS), fold.drop("pos").cast(_VIOLATION_COLUMNS)])
    return found


def record_blocked(
    sql: Sql, plan: DatePlan, found: pl.DataFrame, counts: dict[str, Counts], now: dt.datetime
) -> None:
    """Evidence of a blocked load date; nothing of the date is applied. The fold's violations
    replace those an earlier fold of the date found."""
    sql.keep(  # kept first: a delete never reads the table it deletes from
        "_replaced_violations",
        """SELECT DISTINCT batch_id, rule FROM batch_violations
        WHERE list_contains($batches, batch_id) AND rule <> $gate""",
        batches=_batches(plan),
        gate=GATE,
    )
    sql.delete("batch_violations", "SELECT * FROM _replaced_violations", on=("batch_id", "rule"))
    fold = found.filter(pl.col("rule") != GATE)
    stamped = fold.with_columns(pl.lit(plan.load_date).alias("load_date"), pl.lit(now).alias("detected_at"))
    sql.insert("batch_violations", stamped)
    blamed = sorted(set(found["batch_id"].to_list()))
    reason = f"batch {blamed[0]}: {found['detail'][0]}"
    evidence = EvidenceWriting(sql)
    evidence.insert_attempt(plan.load_date, plan.identity, status="BLOCKED", reason=reason, now=now)
    write_reconciliation(  # the blamed batches: their events, none applied
        sql,
        replace(plan, batches=tuple(d for d in plan.batches if d.batch_id in blamed)),
        {b: Counts(counts[b].source_events) for b in blamed},
        "BLOCKED",
    )
    evidence.set_status(
        "current_orders", keys=[plan.load_date], status=PartitionStatus.BLOCKED, reason=reason, now=now
    )


def same_history(sql: Sql, day: str) -> bool:
    """Whether the folded winners are exactly the history rows the load date wrote (compared as
    multisets in the engine)."""
    for table, rows in HISTORY_ROWS.items():
        columns = ", ".join(name for name, _kind in table_columns(table))
        stored = f"SELECT {columns} FROM {table} WHERE load_date = $day"
        differ = sql.rows(
            f"""SELECT count(*) AS n FROM (
                SELECT * FROM (({stored}) EXCEPT ALL ({rows})) a
                UNION ALL SELECT * FROM (({rows}) EXCEPT ALL ({stored})) b) d""",
            day=day,
        )
        if not differ or differ[0]["n"]:
            return False
    return True


def undo_load_date(sql: Sql, day: str, now: dt.datetime) -> None:
    """Before folding a load date again whole: its groups are queued again, its history and
    registry rows removed, and the latest tables returned to the state before it."""
    latest.log_removal(sql, day)  # while its history rows are there to say where they sat
    queued = sql.rows(
        "SELECT business_date, store_id, load_date, queued_at FROM restatement_queue WHERE load_date = $day",
        day=day,
    )
    _requeue(sql, queued, now)
    for table in ("order_history", "customer_history", "event_registry"):
        sql.delete(table, "SELECT $day AS load_date", on=("load_date",), day=day)
    latest.retract(sql, day)


def _requeue(sql: Sql, rows: Sequence[Mapping[str, Any]], now: dt.datetime) -> None:
    queued = [
        {**row, "queued_at": max(now, row["queued_at"] + _ONE_TICK) if row["queued_at"] else now}
        | {"released_at": None}
        for row in rows
    ]
    sql.upsert("restatement_queue", queued, on=("business_date", "store_id", "load_date"))


def affected_groups(sql: Sql) -> list[str]:
    """The (business_date, store_id) groups the winners leave (their previous images) and join,
    kept as ``_groups``; returns the affected business dates."""
    sql.keep("_groups", AFFECTED_GROUPS)
    return [str(r["business_date"]) for r in sql.rows(GROUP_DATES)]


def write_history(sql: Sql, day: str) -> int:
    """The winners as history rows of the load date; returns the rows written."""
    return sum(sql.insert_from(table, rows, day=day) for table, rows in HISTORY_ROWS.items())


def candidate_rows(sql: Sql, day: str) -> pl.DataFrame:
    """The history rows a candidate would write (kept as Parquet when it fails the gate)."""
    return pl.concat([sql.frame(rows, day=day) for rows in HISTORY_ROWS.values()], how="diagonal")


def register_events(sql: Sql, day: str) -> None:
    """Remember every event id the load date carried, so a replay is a duplicate: the events the
    fold found carrying a new id (``new_id``: neither registered nor carried by an earlier event
    of the load date), each with its source_seq and content. Called only for a load date without
    violations (a blocked date registers nothing), so each id's first event is one to register.
    A set-based filter: numbering each id's events to keep the first and anti-joining the
    registry was markedly slower at volume."""
    sql.insert_from(
        "event_registry",
        """SELECT source, event_id, source_seq, content_sha256, $day AS load_date
        FROM _folded WHERE new_id AND outcome <> $violation""",
        day=day,
        violation=VIOLATION,
    )


def queue_groups(sql: Sql, dates: list[str], day: str, now: dt.datetime) -> int:
    """Durably queue the affected groups of ``_groups``, old and new images; returns their number."""
    groups = sql.rows(
        """SELECT g.business_date, g.store_id, $day AS load_date, q.queued_at FROM _groups g
        LEFT JOIN (SELECT * FROM restatement_queue WHERE load_date = $day) q
          ON q.business_date = g.business_date AND q.store_id = g.store_id""",
        day=day,
    )
    _requeue(sql, groups, now)
    if dates:
        EvidenceWriting(sql).set_status(
            "daily_aggregates",
            keys=dates,
            status=PartitionStatus.PENDING_RESTATEMENT,
            reason=f"load date {day} changed this business date",
            now=now,
        )
    return len(groups)


def advance_watermarks(sql: Sql, plan: DatePlan, day: str) -> None:
    """Monotone per source: the declared slice high, or the highest committed source_seq."""
    params = {"batches": _batches(plan), "violation": VIOLATION}
    found = sql.rows(
        """SELECT source, max(m) AS m, max(w) AS w FROM (
            SELECT source, max(source_seq) AS m, CAST(NULL AS BIGINT) AS w FROM _folded
            WHERE outcome <> $violation GROUP BY source
            UNION ALL SELECT source, max(seq_high), CAST(NULL AS BIGINT) FROM manifests
            WHERE list_contains($batches, batch_id) GROUP BY source
            UNION ALL SELECT source, CAST(NULL AS BIGINT), watermark FROM watermarks) s
        GROUP BY source""",
        **params,
    )
    by_source = {r["source"]: r for r in found}
    rows = []
    for source in sorted({d.source for d in plan.batches}):
        row = by_source.get(source)
        if row is not None and row["m"] is not None:
            kept = max(v for v in (row["m"], row["w"]) if v is not None)
            rows.append({"source": source, "watermark": kept, "load_date": day})
    sql.upsert("watermarks", rows, on=("source",))
