"""Operator-facing use cases: step-attempt evidence, service levels, re-verification that
flags SUSPECT publications, reconciliation reports and the consumer update for one partition."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from replay_assets.core.plan import with_waiting_statuses
from replay_assets.core.slo import PartitionSlo, Slo, Slos
from replay_assets.core.status import PartitionStatus
from replay_assets.storage.home import in_progress
from replay_assets.storage.publish.procedure import Verdict
from replay_assets.storage.unit import WarehouseReader
from replay_assets.usecases.context import Pipeline
from replay_assets.usecases.decide import Decision, decide_with


@dataclass(frozen=True)
class Operations:
    pipeline: Pipeline

    def record_step(self, run_id: str, step: str, key: str, attempt: int, outcome: str, detail: str) -> None:
        with self.pipeline.store.transaction() as unit:
            unit.evidence.record_step_attempt(
                run_id,
                step=step,
                partition_key=key,
                attempt=attempt,
                outcome=outcome,
                detail=detail,
                now=self.pipeline.now(),
            )

    def step_attempts(self, run_id: str) -> list[tuple[str, str, int, str, str]]:
        with self.pipeline.store.connect() as unit:
            return unit.evidence.step_attempts(run_id)

    def slo(self, load_date: str) -> Slo | None:
        with self.pipeline.store.read() as unit:
            return unit.evidence.slo_for(load_date, self.pipeline.settings.slo)

    def daily_slo(self, business_date: str) -> PartitionSlo | None:
        """One business date's service levels, with the load date they are measured on."""
        with self.pipeline.store.read() as unit:
            return self._slos(unit, business_date).get(("daily_aggregates", business_date))

    def daily_slos(self, business_dates: list[str]) -> dict[str, Slo | None]:
        """The service levels of these business dates of daily_aggregates (None: none yet)."""
        with self.pipeline.store.read() as unit:
            found = unit.evidence.daily_slos(self.pipeline.settings.slo, business_dates)
        return {day: found[day][0] if day in found else None for day in business_dates}

    def _slos(self, unit: WarehouseReader, business_date: str | None = None) -> Slos:
        """Every certified partition's service levels (only the daily ones of ``business_date``
        when given), keyed by (asset, partition)."""
        policy = self.pipeline.settings.slo
        out: Slos = {}
        if business_date is None:
            for key in unit.publish.published_partitions("current_orders"):
                slo = unit.evidence.slo_for(key, policy)
                if slo is not None:
                    out["current_orders", key] = PartitionSlo("current_orders", key, key, slo)
        days = None if business_date is None else [business_date]
        for day, (slo, fed_by) in unit.evidence.daily_slos(policy, days).items():
            out["daily_aggregates", day] = PartitionSlo("daily_aggregates", day, fed_by, slo)
        return out

    def reverify(self, asset: str) -> Verdict:
        """Recompute published partitions as of their own load dates; flag mismatches SUSPECT
        (still visible, with the reason) until a repair certifies them again."""
        with self.pipeline.store.transaction() as unit:
            verdict = (
                unit.reports.reverify_state()
                if asset == "current_orders"
                else unit.reports.reverify_aggregates()
            )
            for key, reason in verdict.reasons.items():
                unit.evidence.set_status(
                    asset,
                    keys=[key],
                    status=PartitionStatus.SUSPECT,
                    reason=f"re-verification: {reason}",
                    now=self.pipeline.now(),
                )
        return verdict

    def daily_totals(self, first: str, last: str) -> list[dict[str, Any]]:
        """Certified totals per business date over all stores (for the UI's chart)."""
        with self.pipeline.store.connect() as unit:
            return unit.reports.daily_totals(first, last)

    def reconcile(self) -> list[dict[str, Any]]:
        """Per load date: the reconciliation sums and whether they add up (source events =
        accepted + rejected + skipped)."""
        with self.pipeline.store.connect() as unit:
            return unit.reports.reconciliation_report()

    def check_segments(self) -> tuple[int, list[dict[str, object]]]:
        """The landing's registered segment files, and those whose bytes are not what was
        registered (gone, resized or changed)."""
        with self.pipeline.store.connect() as unit:
            return unit.landing.check_segments()

    def status_report(self) -> tuple[Decision, dict[str, list[dict[str, Any]]], Slos]:
        """Read-only, in one read of the last committed state (one wait at most while a writer
        holds the warehouse): the plan, the partition status with the waiting load dates' live
        statuses overlaid (what the next ``run`` records), and the service levels."""
        with self.pipeline.store.read() as unit:
            decision = decide_with(self.pipeline, unit)[0]
            report = unit.reports.status_report()
            slos = self._slos(unit)
            horizon = unit.retention.pruned_through()
        keep = self.pipeline.settings.retention_load_dates
        report["retention"] = [{"retention_load_dates": keep, "pruned_through": horizon or None}]
        report["partitions"] = with_waiting_statuses(
            report["partitions"], decision.plans, self.pipeline.now()
        )
        return decision, report, slos

    def run_costs(self, run_id: str, step: str) -> dict[str, float]:
        """Cost evidence of one step of one run, for asset metadata."""
        with self.pipeline.store.connect() as unit:
            return unit.evidence.run_costs(run_id, step)

    def reading(self) -> dict[str, Any]:
        """Where the last read came from, and what a writer is doing now (if anything)."""
        return {
            "source": self.pipeline.store.source,
            "in_progress": in_progress.current(self.pipeline.settings.home),
        }

    def consumer_update(self, partition: str) -> list[str]:
        """The factual update a consumer of one partition needs, in their terms (read-only)."""
        live = self.status_report()[1]["partitions"]
        rows = sorted((r for r in live if r["partition_key"] == partition), key=lambda r: str(r["asset"]))
        with self.pipeline.store.read() as unit:
            pointer = unit.publish.certified_pointer()
            versions = unit.publish.newest_versions(partition)
            found = self._slos(unit, partition)
            slo = unit.evidence.slo_for(partition, self.pipeline.settings.slo)
        if slo is not None:
            found["current_orders", partition] = PartitionSlo("current_orders", partition, partition, slo)
        return consumer_text(partition, rows, versions=versions, pointer=pointer, slos=found)


IMPACT = {
    PartitionStatus.CERTIFIED: ("correct and complete", "nothing; use it"),
    PartitionStatus.RESTATED: (
        "corrected: a newer version replaced an earlier one",
        "re-read it; the earlier version stays queryable in publications",
    ),
    PartitionStatus.PENDING_RESTATEMENT: (
        "about to change: a correction is queued",
        "the restated version is published after the correction is certified",
    ),
    PartitionStatus.FAILED_CANDIDATE: (
        "not updated: a new version failed certification and was withheld",
        "the data team repairs the input; you keep seeing the last good version",
    ),
    PartitionStatus.SUSPECT: (
        "possibly wrong: re-verification found a difference from the immutable input",
        "a repair from immutable raw is republished as a new version; treat figures with care",
    ),
    PartitionStatus.BLOCKED_UPSTREAM: (
        "late: the source delivery is not ready",
        "loaded and certified as soon as the source is ready",
    ),
    PartitionStatus.BLOCKED: (
        "late: the source delivery broke the contract and was refused whole",
        "applied once the source re-delivers it corrected or an operator skips it",
    ),
    PartitionStatus.MISSING: ("unavailable: a delivery is missing", "applied once the source delivers it"),
    PartitionStatus.DELAYED: (
        "late: waiting behind an earlier load date",
        "applied in order once the earlier date is",
    ),
    PartitionStatus.LATE_DELIVERY: (
        "incomplete: a late delivery arrived after later dates were applied",
        "an operator backfills it in the backfill lane",
    ),
}


def consumer_text(
    partition: str,
    rows: list[dict[str, Any]],
    versions: dict[str, int],
    pointer: str | None,
    slos: Slos,
) -> list[str]:
    if not rows:
        return [f"{partition}: nothing is known about this partition yet."]
    lines = []
    for row in rows:
        status = PartitionStatus(row["status"])
        impact, next_step = IMPACT[status]
        good = (
            f"version {row['last_good_version']} (sha256 {str(row['last_good_sha256'])[:12]})"
            if row["last_good_version"]
            else "none yet"
        )
        restated = versions.get(str(row["asset"]), 0) > 1
        lines += [
            f"{row['asset']} {partition}: {status.value}",
            f"  what it means: {impact}",
            f"  last good version: {good}; restated: {'yes' if restated else 'no'}",
            f"  why: {row['reason'] or '-'}",
            f"  what happens next: {next_step}",
        ]
    for (asset, _), found in sorted(slos.items()):
        slo = found.slo
        verdict = "all met" if slo.all_met else "NOT all met"
        what = (
            f"load date {partition}"
            if asset == "current_orders"
            else f"daily_aggregates {partition} (last fed by load date {found.load_date})"
        )
        lines.append(
            f"{what} service levels: freshness {slo.freshness_minutes:g} min, completeness "
            f"{slo.completeness_pct:g} %, duration "
            f"{'-' if slo.duration_minutes is None else f'{slo.duration_minutes:g}'} min, "
            f"availability {slo.availability_minutes:g} min ({verdict})"
        )
    lines.append(f"consumers currently see load date {pointer or 'none'} in current_orders.")
    return lines
