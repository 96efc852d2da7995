"""Evidence both engines write and report the same way: a partition's status columns, a step's
measured cost, and the shared statements of the cost and service-level reports (DuckDB's dialect,
in SQL both engines run: named groups, joins for correlated subqueries)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from replay_assets.core.status import PartitionStatus


@dataclass
class Cost:
    cpu_seconds: float = 0.0
    wall_seconds: float = 0.0


def status_values(
    status: PartitionStatus, reason: str, now: dt.datetime, last_good: tuple[int, str] | None
) -> dict[str, object]:
    """The columns an upsert of partitions' status writes."""
    return {
        "status": status.value,
        "reason": reason,
        "last_good_version": last_good[0] if last_good else None,
        "last_good_sha256": last_good[1] if last_good else None,
        "updated_at": now,
    }


# Cost per delivered batch (seed 002's "per-page cost"). Landing is measured per batch.
# Applying is one set-based fold per load date, so its CPU and wall seconds exist per load date
# only: each batch is given its share of the newest application of its date in proportion to its
# source events (``apply_basis`` says so). Rows written are the batch's own: two per landed event
# (raw receipt, staged event) and one history row per accepted event.
BATCH_COSTS = """
WITH landing AS (
    SELECT batch_id, sum(bytes_read) AS bytes_read, sum(cpu_seconds) AS cpu, sum(wall_seconds) AS wall,
           sum(rows_written) AS rows_written
    FROM costs WHERE step = 'land' AND batch_id IS NOT NULL GROUP BY batch_id
), applying AS (
    SELECT partition_key AS load_date, max_by(cpu_seconds, recorded_at) AS cpu,
           max_by(wall_seconds, recorded_at) AS wall
    FROM costs WHERE step = 'apply' GROUP BY partition_key
), totals AS (
    SELECT *, sum(CASE WHEN status <> 'SKIPPED' THEN source_events END)
               OVER (PARTITION BY load_date) AS date_events
    FROM reconciliation
), batches AS (  -- a CASE, not nullif, which Sail's cluster mode may fail to find (docs/facts.md)
    SELECT load_date, batch_id, source_events, accepted, rejected, skipped_duplicate, skipped_stale, status,
           CASE WHEN date_events = 0 THEN NULL ELSE source_events / date_events END AS share
    FROM totals
)
SELECT b.load_date, b.batch_id, b.status, b.source_events, b.accepted, b.rejected, b.skipped_duplicate,
       b.skipped_stale, coalesce(l.bytes_read, 0) AS bytes_read,
       round(coalesce(l.cpu, 0), 6) AS land_cpu_seconds, round(coalesce(l.wall, 0), 6) AS land_wall_seconds,
       round(CASE WHEN b.status <> 'SKIPPED' THEN a.cpu * b.share END, 6) AS apply_cpu_seconds,
       round(CASE WHEN b.status <> 'SKIPPED' THEN a.wall * b.share END, 6) AS apply_wall_seconds,
       coalesce(l.rows_written, 0) + b.accepted AS rows_written,
       'share of its load date by source events' AS apply_basis
FROM batches b LEFT JOIN landing l ON l.batch_id = b.batch_id
LEFT JOIN applying a ON a.load_date = b.load_date
ORDER BY b.load_date, b.batch_id"""
# Batches of the load date that count: every delivery except a blocked one (a blocked batch that
# is still blocked leaves the date unapplied; a corrected re-delivery replaces it). A batch an
# operator skipped counts as declared but not landed: the partition is incomplete by it.
CONTRIBUTING = """
SELECT max(m.ready_at) AS ready_at, coalesce(sum(m.source_events), 0) AS declared,
       coalesce(sum(CASE WHEN r.status <> 'SKIPPED' THEN m.source_events END), 0) AS landed
FROM manifests m JOIN reconciliation r ON r.batch_id = m.batch_id
WHERE m.load_date = $day AND r.status <> 'BLOCKED'"""
# The service levels of daily_aggregates partitions, all business dates in one query (``$all``,
# else those of ``$days``). A business date is fed by every applied load date that queued one of
# its groups (restatement_queue); it is as fresh as its newest one (L): certified when L's groups
# were released. Its duration counts from the start of the run that applied L (the work that
# brought the data, apply and restatement together); freshness from the newest ready_at among the
# manifests of every load date that fed it.
DAILY_SLOS = """
WITH fed AS (
    SELECT q.business_date, q.load_date, q.released_at
    FROM restatement_queue q SEMI JOIN load_dates d ON d.load_date = q.load_date
    WHERE $all OR list_contains($days, q.business_date)
), newest AS (
    SELECT business_date, max(load_date) AS load_date FROM fed GROUP BY business_date
), certified AS (
    SELECT f.business_date, n.load_date, bool_and(f.released_at IS NOT NULL) AS released,
           max(f.released_at) AS certified_at
    FROM fed f JOIN newest n ON f.business_date = n.business_date AND f.load_date = n.load_date
    GROUP BY f.business_date, n.load_date
), inputs AS (
    SELECT f.business_date, max(m.ready_at) AS ready_at, coalesce(sum(m.source_events), 0) AS declared,
           coalesce(sum(CASE WHEN r.status <> 'SKIPPED' THEN m.source_events END), 0) AS landed
    FROM (SELECT DISTINCT business_date, load_date FROM fed) f
    JOIN manifests m ON m.load_date = f.load_date JOIN reconciliation r ON r.batch_id = m.batch_id
    WHERE r.status <> 'BLOCKED'
    GROUP BY f.business_date
), runs AS (
    SELECT c.business_date, max_by(p.run_id, p.version) AS run_id
    FROM certified c JOIN publications p
      ON p.asset = 'current_orders' AND p.partition_key = c.load_date AND p.certified_at <= c.certified_at
    GROUP BY c.business_date
), starts AS (
    SELECT run_id, min(recorded_at) AS started FROM step_attempts GROUP BY run_id
)
SELECT c.business_date, c.load_date, c.certified_at, i.ready_at, i.declared, i.landed, s.started
FROM certified c JOIN inputs i ON i.business_date = c.business_date
LEFT JOIN runs u ON u.business_date = c.business_date LEFT JOIN starts s ON s.run_id = u.run_id
WHERE c.released
ORDER BY c.business_date"""


def days_parameters(business_dates: list[str] | None) -> dict[str, object]:
    """``DAILY_SLOS``'s parameters: every business date, or those listed (a list never empty, so
    each engine types it as a list of text)."""
    return {"all": business_dates is None, "days": list(business_dates or [""])}
