"""The use cases both shells call (Dagster assets and the CLI): decide, land, apply, publish,
resolve. Reads the landing area and the warehouse, asks the core, writes through storage."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

import duckdb

from replay_assets.core.config import Settings
from replay_assets.core.errors import ErrorCode, ReplayError
from replay_assets.core.events import ValidationContext, canonical_json, sha256_text
from replay_assets.core.manifest import Manifest
from replay_assets.core.plan import DatePlan, next_to_apply, plan_load_dates
from replay_assets.core.status import WAITING_PARTITION_STATUS, ApplyOutcome, DateStatus, PartitionStatus
from replay_assets.storage.apply.facts import (
    contiguous_ranges,
    record_attempt,
    require_landed,
    warehouse_facts,
)
from replay_assets.storage.apply.load_date import ApplyResult, apply_load_date, from_record, to_record
from replay_assets.storage.db import failpoints
from replay_assets.storage.db.clock import VirtualClock, real_now, sleep_real
from replay_assets.storage.db.warehouse import Warehouse, WarehouseReader, one
from replay_assets.storage.evidence.costs import Cost, measure, record_cost, run_costs
from replay_assets.storage.evidence.status import set_status
from replay_assets.storage.journal import executor as journal
from replay_assets.storage.journal.identities import apply_operation, publications_digest, publish_operation
from replay_assets.storage.landing import area as landing_area
from replay_assets.storage.landing.ingest import Landed, land_batch
from replay_assets.storage.publish import certify, published_copy
from replay_assets.storage.publish.aggregates import Published, publish_aggregates

# DELAYED is applicable on purpose: a manual or backfill run of a date whose predecessor is not
# certified becomes a failed candidate (MISSING_UPSTREAM_LOAD_DATE), never a silent refusal.
APPLICABLE = frozenset({DateStatus.READY, DateStatus.RESTATE, DateStatus.APPLIED, DateStatus.DELAYED})


@dataclass(frozen=True)
class Decision:
    plans: list[DatePlan]
    next: DatePlan | None
    unreadable: list[str]  # manifests that cannot be read, each naming its file and reason


class Pipeline:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.clock = VirtualClock(settings.home, settings.fixed_now) if settings.fixed_now else None
        self.warehouse = Warehouse(settings.home, settings.lock_timeout_seconds)
        self.reader = WarehouseReader(settings.home, settings.lock_timeout_seconds)

    def now(self) -> dt.datetime:
        return self.clock.now() if self.clock else real_now()

    def sleep(self, seconds: float) -> None:
        """Wait on the pipeline's clock (the virtual one only advances)."""
        if self.clock:
            self.clock.sleep(seconds)
        else:
            sleep_real(seconds)

    def _decide(self, con: duckdb.DuckDBPyConnection) -> tuple[Decision, dict[str, landing_area.Seen]]:
        """Readable manifests are kept by their content hash (never by batch id alone: a batch
        id used twice must be seen twice, so the plan can fail the second use closed); an
        unreadable one in a load-date folder is a delivery that is not ready, so its date
        waits instead of applying without it."""
        landing = self.settings.landing
        seen = landing_area.scan(landing, self.settings.limits)
        unreadable = [f"{s.path.relative_to(landing)}: {s.error}" for s in seen if s.error]
        by_sha = {s.manifest.sha256: s for s in seen if s.manifest}
        now = self.now()
        deliveries = [landing_area.to_delivery(s, now, self.settings.limits) for s in by_sha.values()]
        blocked = (landing_area.unreadable_delivery(s, landing) for s in seen if s.error)
        deliveries += [d for d in blocked if d is not None]
        window = (self.settings.load_date_start, now.date().isoformat())
        plans = plan_load_dates(deliveries, warehouse_facts(con), window, self.settings.sources)
        return Decision(plans, next_to_apply(plans), unreadable), by_sha

    def read_decision(self) -> Decision:
        """The decision from the last committed state, through the reader (no writer lock)."""
        with self.reader.read() as con:
            return self._decide(con)[0]

    def decide(self, timeout: float | None = None) -> Decision:
        """What applies next and why the rest waits; ``timeout=0`` for sensors (never wait)."""
        with self.warehouse.connect(timeout) as con:
            return self._decide(con)[0]

    def land(self, load_date: str, run_id: str | None = None) -> list[Landed]:
        """Land every active batch of the load date, each file read once as a stream and checked
        against its manifest (sha256, counts) in the same pass; a mismatch rolls everything back,
        records BLOCKED_UPSTREAM naming the file and lands nothing."""
        try:
            with self.warehouse.transaction() as con:
                decision, by_sha = self._decide(con)
                plan = _plan_for(decision, load_date)
                if plan.status not in APPLICABLE:
                    raise ReplayError(
                        ErrorCode.NOT_READY, f"load date {load_date} is {plan.status}: {plan.reason}"
                    )
                return [
                    self._land_batch(con, by_sha[d.manifest_sha256], load_date, run_id) for d in plan.batches
                ]
        except landing_area.DeliveryMismatch as mismatch:
            problem = str(mismatch)
        with self.warehouse.transaction() as con:
            decision, _ = self._decide(con)
            record_attempt(
                con, _plan_for(decision, load_date), PartitionStatus.BLOCKED_UPSTREAM, problem, self.now()
            )
        raise ReplayError(ErrorCode.NOT_READY, f"load date {load_date}: {problem}")

    def _land_batch(
        self, con: duckdb.DuckDBPyConnection, seen: landing_area.Seen, load_date: str, run_id: str | None
    ) -> Landed:
        manifest = seen.manifest
        assert manifest is not None
        files = landing_area.delivery_files(seen.path.parent, manifest)
        try:
            with measure() as cost:
                batch = land_batch(con, manifest, files, self.validation_context(manifest), self.now())
        except landing_area.DeliveryMismatch as mismatch:
            raise landing_area.DeliveryMismatch(f"batch {manifest.batch_id}: {mismatch}") from mismatch
        if batch.new:
            record_cost(
                con,
                run_id=run_id,
                step="land",
                partition_key=load_date,
                cost=cost,
                now=self.now(),
                batch_id=batch.batch_id,
                events=batch.source_events,
                bytes_read=batch.bytes_read,
                rows_written=2 * batch.source_events,
            )
        return batch

    def validation_context(self, manifest: Manifest) -> ValidationContext:
        return ValidationContext(
            dt.date.fromisoformat(self.settings.business_date_start),
            self.settings.business_date_end(self.now()),
            manifest.seq_low,
            manifest.seq_high,
            self.settings.limits.line_bytes,
        )

    def apply(self, load_date: str, run_id: str | None, sealed_ok: bool = False) -> ApplyResult:
        """Fold one landed load date and gate the result in the same transaction, as a journaled
        operation: a retry (another try or run id, after a crash anywhere) never mutates twice.
        BLOCKED evidence is committed before the error is raised; a failed candidate is rolled
        back, then kept inspectable while consumers keep the last certified state."""
        with self.warehouse.connect() as con:
            decision, _ = self._decide(con)
            plan = _plan_for(decision, load_date)
            allowed = APPLICABLE | ({DateStatus.LATE_DELIVERY} if sealed_ok else set())
            if plan.status not in allowed:
                raise ReplayError(
                    ErrorCode.NOT_READY, f"load date {load_date} is {plan.status}: {plan.reason}"
                )
            require_landed(con, plan)
            op = apply_operation(con, plan)
        first = decision.plans[0].load_date

        def mutate(con: duckdb.DuckDBPyConnection) -> tuple[dict[str, Any], str | None]:
            with measure() as cost:
                result = apply_load_date(con, plan, first, run_id, self.now(), sealed_ok)
            if result.status is ApplyOutcome.FAILED_CANDIDATE:
                raise journal.Divert(lambda c: self._keep_failed_state(c, plan, result, cost, run_id))
            self._record_apply_cost(con, result, cost, run_id, 0)
            failpoints.hit(self.settings.fail_point, "apply.before_commit")
            certified = result.status in (ApplyOutcome.APPLIED, ApplyOutcome.RESTATED, ApplyOutcome.UNCHANGED)
            digest = result.content_sha256 or ""
            return to_record(result), certify.target_digest(con, load_date, digest) if certified else None

        def target_now(con: duckdb.DuckDBPyConnection, entry: journal.Entry) -> str | None:
            if entry.target_sha256 is None:
                return None  # a blocked or failed outcome has no target state to compare
            verified = apply_load_date(
                con, plan, first, run_id, self.now(), sealed_ok=True
            )  # from raw; read-only
            return certify.target_digest(con, load_date, verified.content_sha256 or "")

        def repair(con: duckdb.DuckDBPyConnection) -> tuple[dict[str, Any], str | None]:
            """The history matches raw but its certified record drifted: certify it again."""
            verified = apply_load_date(con, plan, first, run_id, self.now(), sealed_ok=True)
            if (
                verified.status is ApplyOutcome.FAILED_CANDIDATE
                or verified.controls is None
                or verified.content_sha256 is None
            ):
                raise ReplayError(
                    ErrorCode.HISTORY_DIVERGED, f"load date {load_date} cannot be certified again"
                )
            reason = "repaired: the stored snapshot record drifted from history recomputed from raw"
            certify.certify_state(
                con, load_date, verified.content_sha256, verified.checks, run_id, self.now(), reason
            )
            certify.write_snapshot(
                con, load_date, verified.controls, verified.row_count, verified.content_sha256
            )
            return to_record(verified), certify.target_digest(con, load_date, verified.content_sha256)

        record = journal.execute(
            self.warehouse,
            op,
            mutate,
            self.refresh_published,
            target_now,
            self.now,
            self.settings.fail_point,
            repair=repair,
        )
        failpoints.hit(self.settings.fail_point, "apply.after_commit")
        result = from_record(record)
        if result.status is ApplyOutcome.BLOCKED:
            raise ReplayError(ErrorCode.BATCH_BLOCKED, f"load date {load_date}: {result.reasons[0]}")
        return result

    def _record_apply_cost(
        self,
        con: duckdb.DuckDBPyConnection,
        result: ApplyResult,
        cost: Cost,
        run_id: str | None,
        candidate_bytes: int,
    ) -> None:
        events = sum(c.source_events for c in result.counts.values())
        record_cost(
            con,
            run_id=run_id,
            step="apply",
            partition_key=result.load_date,
            cost=cost,
            now=self.now(),
            events=events,
            rows_written=result.rows_written,
            candidate_bytes=candidate_bytes,
        )

    def _keep_failed_state(
        self,
        con: duckdb.DuckDBPyConnection,
        plan: DatePlan,
        result: ApplyResult,
        cost: Cost,
        run_id: str | None,
    ) -> tuple[dict[str, Any], str | None]:
        assert result.candidate_rows is not None and result.content_sha256 is not None
        path = certify.record_failed_candidate(
            con,
            self.settings.home,
            "current_orders",
            plan.load_date,
            plan.load_date,
            result.content_sha256,
            result.checks,
            result.candidate_rows,
            run_id,
            self.now(),
        )
        self._record_apply_cost(con, result, cost, run_id, path.stat().st_size)
        con.execute(
            "INSERT INTO load_date_attempts ("
            "load_date, identity, status, reason, attempted_at"
            ") VALUES (?, ?, ?, ?, ?)",
            [plan.load_date, plan.gate_key, DateStatus.FAILED_CANDIDATE.value, result.reasons[0], self.now()],
        )
        return to_record(result), None

    def publish(self, business_dates: list[str], run_id: str | None) -> list[Published]:
        """Gate and publish business dates as of the certified pointer, as a journaled operation:
        the same dates on the same certified state publish once, whatever retries happen."""
        dates = sorted(business_dates)
        with self.warehouse.connect() as con:
            op = publish_operation(con, dates)

        def mutate(con: duckdb.DuckDBPyConnection) -> tuple[dict[str, Any], str | None]:
            with measure() as cost:
                published = publish_aggregates(con, self.settings.home, dates, run_id, self.now())
            key = f"{dates[0]}..{dates[-1]}" if dates else ""
            record_cost(
                con,
                run_id=run_id,
                step="publish",
                partition_key=key,
                cost=cost,
                now=self.now(),
                rows_written=sum(p.rows for p in published),
                candidate_bytes=sum(p.candidate_bytes for p in published),
            )
            return {"published": [p.to_record() for p in published]}, publications_digest(con, dates)

        record = journal.execute(
            self.warehouse,
            op,
            mutate,
            self.refresh_published,
            lambda con, _: publications_digest(con, dates),
            self.now,
            self.settings.fail_point,
        )
        return [Published.from_record(r) for r in record["published"]]

    def finish_in_doubt(self) -> list[str]:
        """Finish operations a killed process left committed but incomplete (evidence only)."""
        return journal.finish_committed(
            self.warehouse, self.refresh_published, self.now, self.settings.fail_point
        )

    def refresh_published(self) -> list[str]:
        """Export what is certified to the published copy (idempotent; after a crash between a
        commit and its export, the next call catches up)."""
        with self.warehouse.connect() as con:
            return published_copy.refresh(con, self.settings.home)

    def pending_restatements(self, timeout: float | None = None) -> tuple[list[tuple[str, str]], str]:
        """Contiguous ranges of business dates with queued groups, and a key for the queue state."""
        with self.warehouse.connect(timeout) as con:
            rows = con.execute("""
                SELECT business_date, store_id, load_date, CAST(queued_at AS VARCHAR)
                FROM restatement_queue WHERE released_at IS NULL
                  AND load_date <= (SELECT max(value) FROM pointers WHERE name = 'published_load_date')
                ORDER BY 1, 2, 3""").fetchall()
        dates = sorted({r[0] for r in rows})
        return contiguous_ranges(dates), sha256_text(canonical_json([list(r) for r in rows]))

    def resolve(self, batch_id: str, note: str, operator: str) -> None:
        """Operator decision to skip a batch that blocks its load date (audited); the date can
        then apply without it. A batch that blocks nothing is refused: skipping a healthy batch
        would apply its load date without its events."""
        with self.warehouse.transaction() as con:
            decision, _ = self._decide(con)
            delivered = {d.load_date for p in decision.plans for d in p.batches if d.batch_id == batch_id}
            known = one(con, "SELECT load_date FROM manifests WHERE batch_id = ?", [batch_id])
            if not delivered and not known:
                raise ReplayError(ErrorCode.UNKNOWN_BATCH, f"no delivery with batch id {batch_id}")
            days = sorted(delivered | ({str(known[0])} if known else set()))
            plans = [_plan_for(decision, day) for day in days]
            if not any(_blocks(con, plan, batch_id) for plan in plans):
                states = ", ".join(f"{p.load_date} {p.status}" for p in plans)
                raise ReplayError(
                    ErrorCode.USAGE,
                    f"batch {batch_id} does not block its load date ({states}); only a batch that "
                    "blocks a BLOCKED or BLOCKED_UPSTREAM load date can be skipped",
                )
            con.execute(
                """INSERT OR REPLACE INTO batch_resolutions (batch_id, action, note, operator, resolved_at)
                   VALUES (?, 'skip', ?, ?, ?)""",
                [batch_id, note, operator, self.now()],
            )
            con.execute("UPDATE reconciliation SET status = 'SKIPPED' WHERE batch_id = ?", [batch_id])

    def record_backfill(
        self, backfill_id: str, asset: str, first: str, last: str, note: str, operator: str
    ) -> None:
        """The operator note of a backfill: who, why, which range, which lane."""
        with self.warehouse.transaction() as con:
            con.execute(
                "INSERT OR REPLACE INTO backfills ("
                "backfill_id, asset, from_partition, to_partition, lane, note, operator, created_at"
                ") VALUES (?, ?, ?, ?, 'backfill', ?, ?, ?)",
                [backfill_id, asset, first, last, note, operator, self.now()],
            )

    def run_costs(self, run_id: str, step: str) -> dict[str, float]:
        """Cost evidence of one step of one run, for asset metadata."""
        with self.warehouse.connect() as con:
            return run_costs(con, run_id, step)

    def cursor(self, sensor: str) -> str | None:
        with self.warehouse.connect() as con:
            row = one(con, "SELECT cursor FROM sensor_cursors WHERE name = ?", [sensor])
        return str(row[0]) if row else None

    def save_cursor(self, sensor: str, cursor: str) -> None:
        with self.warehouse.transaction() as con:
            con.execute(
                "INSERT OR REPLACE INTO sensor_cursors (name, cursor) VALUES (?, ?)",
                [sensor, cursor],
            )

    def record_plan_status(self) -> Decision:
        """Write the live status of every waiting load date (MISSING, DELAYED, ...)."""
        with self.warehouse.transaction() as con:
            decision, _ = self._decide(con)
            for plan in decision.plans:
                if plan.status in WAITING_PARTITION_STATUS:
                    set_status(
                        con,
                        "current_orders",
                        [plan.load_date],
                        WAITING_PARTITION_STATUS[plan.status],
                        plan.reason,
                        self.now(),
                    )
            return decision


def _blocks(con: duckdb.DuckDBPyConnection, plan: DatePlan, batch_id: str) -> bool:
    """Whether ``batch_id`` is what blocks ``plan``'s load date: a contract violation of its
    own, or its delivery is the one not ready (named by the reason)."""
    if plan.status is DateStatus.BLOCKED:
        violated = one(
            con,
            "SELECT 1 FROM batch_violations WHERE batch_id = ? AND load_date = ?",
            [batch_id, plan.load_date],
        )
        return violated is not None and batch_id in {d.batch_id for d in plan.batches}
    if plan.status is DateStatus.BLOCKED_UPSTREAM:
        named = any(f"batch {batch_id}{end}" in plan.reason for end in (" ", ":"))
        return any(d.batch_id == batch_id and (d.not_ready or named) for d in plan.batches)
    return False


def _plan_for(decision: Decision, load_date: str) -> DatePlan:
    for plan in decision.plans:
        if plan.load_date == load_date:
            return plan
    raise ReplayError(ErrorCode.NOT_READY, f"load date {load_date} has no delivery")
