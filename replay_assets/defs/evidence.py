"""Every piece of asset and check metadata a person reads in the Dagster UI, built here so the
asset bodies stay wiring: per-step metadata, check results, markdown tables for reconciliation,
controls and service levels, and a bar chart of daily totals (the UI renders markdown)."""

from collections.abc import Mapping, Sequence
from typing import Any

import dagster as dg

from replay_assets.core.config import SloPolicy
from replay_assets.core.gate import Check, CheckOutcome
from replay_assets.core.slo import Slo
from replay_assets.core.state import Counts
from replay_assets.storage.apply.load_date import ApplyResult
from replay_assets.storage.landing.ingest import Landed
from replay_assets.storage.publish.aggregates import Published
from replay_assets.storage.publish.reverify import Verdict

BAR_WIDTH = 24
SLO_ROWS = 31


def _table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def reconciliation(counts: Mapping[str, Counts]) -> dg.MetadataValue:
    rows = [
        (
            batch,
            c.source_events,
            c.accepted,
            c.rejected,
            c.skipped_duplicate,
            c.skipped_stale,
            "yes" if c.balanced() else "**NO**",
        )
        for batch, c in sorted(counts.items())
    ]
    header = ("batch", "source events", "accepted", "rejected", "duplicate", "stale", "adds up")
    return dg.MetadataValue.md(_table(header, rows))


def controls(values: tuple[int, ...]) -> dg.MetadataValue:
    header = ("active lines", "distinct orders", "units", "amount", "cost", "gross profit")
    return dg.MetadataValue.md(_table(header, [values]))


def service_levels(slo: Slo, policy: SloPolicy) -> dg.MetadataValue:
    def met(flag: bool | None) -> str:
        return "-" if flag is None else ("met" if flag else "**MISSED**")

    rows = [
        (
            "freshness",
            f"{slo.freshness_minutes:g} min",
            f"≤ {policy.freshness_minutes:g} min",
            met(slo.freshness_met),
        ),
        (
            "completeness",
            f"{slo.completeness_pct:g} %",
            f"≥ {policy.completeness_pct:g} %",
            met(slo.completeness_met),
        ),
        (
            "duration",
            "-" if slo.duration_minutes is None else f"{slo.duration_minutes:g} min",
            f"≤ {policy.duration_minutes:g} min",
            met(slo.duration_met),
        ),
        (
            "availability",
            f"{slo.availability_minutes:g} min",
            f"≤ {policy.availability_minutes:g} min",
            met(slo.availability_met),
        ),
    ]
    return dg.MetadataValue.md(_table(("service level", "measured", "target", ""), rows))


SERVICE_LEVELS_CHECK = "service_levels_met"


def slo_checks(asset: str, found: Mapping[str, Slo | None], policy: SloPolicy) -> list[dg.AssetCheckResult]:
    """The certification report's service-level line: a warning, never a gate (the data is
    certified either way). Passes when every certified partition of the step met every target;
    none when nothing was certified (a failed candidate has no service levels: the gate says why,
    and the check shows as skipped)."""
    found = {key: slo for key, slo in found.items() if slo is not None}
    return [_slo_check(asset, found, policy)] if found else []


def _slo_check(asset: str, found: Mapping[str, Slo | None], policy: SloPolicy) -> dg.AssetCheckResult:
    missed = sorted(key for key, slo in found.items() if slo is None or not slo.all_met)
    meta: dict[str, Any] = {"partitions": len(found), "missed": ", ".join(missed[:10]) or "none"}
    if len(found) == 1:
        ((key, slo),) = found.items()
        meta |= {"partition": key}
        if slo is not None:
            meta |= {"service_levels": service_levels(slo, policy)}
    else:
        meta |= {"service_levels": daily_service_levels(found)}
    return dg.AssetCheckResult(
        asset_key=asset,
        check_name=SERVICE_LEVELS_CHECK,
        passed=not missed,
        severity=dg.AssetCheckSeverity.WARN,
        description=(
            "every service level met"
            if not missed
            else f"service levels missed (or not measurable) for {', '.join(missed[:3])}"
        ),
        metadata=meta,
    )


def daily_service_levels(found: Mapping[str, Slo | None]) -> dg.MetadataValue:
    """One row per business date: its four service levels and whether all were met."""

    def cell(value: float | None, unit: str) -> str:
        return "-" if value is None else f"{value:g} {unit}"

    rows = [
        (
            key,
            cell(s.freshness_minutes, "min"),
            cell(s.completeness_pct, "%"),
            cell(s.duration_minutes, "min"),
            cell(s.availability_minutes, "min"),
            "met" if s.all_met else "**MISSED**",
        )
        if s is not None
        else (key, "-", "-", "-", "-", "not certified")
        for key, s in sorted(
            found.items(), key=lambda item: (item[1] is not None and item[1].all_met, item[0])
        )
    ]
    if len(rows) > SLO_ROWS:  # the missed ones first; a long backfill keeps the table readable
        rows = [*rows[:SLO_ROWS], (f"({len(rows) - SLO_ROWS} more)", "", "", "", "", "")]
    header = ("business date", "freshness", "completeness", "duration", "availability", "")
    return dg.MetadataValue.md(_table(header, rows))


def _missed_first(item: tuple[str, Slo | None]) -> tuple[bool, str]:
    return (item[1] is not None and item[1].all_met, item[0])


def daily_totals_chart(totals: Sequence[Mapping[str, Any]]) -> dg.MetadataValue:
    """One row per business date: orders, amount, gross profit and a bar of the amount."""
    peak = max((int(t["amount_minor"]) for t in totals), default=0) or 1
    rows = [
        (
            t["business_date"],
            t["order_count"],
            t["amount_minor"],
            t["gross_profit_minor"],
            "█" * max(1, round(BAR_WIDTH * int(t["amount_minor"]) / peak)) if t["amount_minor"] else "",
        )
        for t in totals
    ]
    header = ("business date", "orders", "amount", "gross profit", "amount (chart)")
    return dg.MetadataValue.md(_table(header, rows))


def landed(batches: Sequence[Landed], costs: Mapping[str, float]) -> dict[str, Any]:
    return {
        "batches": len(batches),
        "newly_landed": sum(b.new for b in batches),
        "source_events": sum(b.source_events for b in batches),
        "rejected": sum(b.rejected for b in batches),
        "bytes_read": sum(b.bytes_read for b in batches),
        **costs,
    }


def state(
    result: ApplyResult, slo: Slo | None, policy: SloPolicy, costs: Mapping[str, float]
) -> dict[str, Any]:
    counts = result.counts.values()
    values = result.controls.as_tuple() if result.controls else ()
    meta = {
        "outcome": result.status.value,
        "content_sha256": result.content_sha256 or "",
        "accepted": sum(c.accepted for c in counts),
        "skipped_duplicate": sum(c.skipped_duplicate for c in counts),
        "skipped_stale": sum(c.skipped_stale for c in counts),
        "rejected": sum(c.rejected for c in counts),
        "affected_business_dates": ", ".join(result.affected_business_dates),
        "controls (lines, orders, units, amount, cost, profit)": str(values),
        "dagster/row_count": result.row_count,
        "controls": controls(values) if values else "none (not certified)",
        "reconciliation": reconciliation(result.counts),
        **costs,
        **({f"slo_{k}": v for k, v in slo.to_record().items() if v is not None} if slo else {}),
    }
    if slo:
        meta["service_levels"] = service_levels(slo, policy)
    return meta


def aggregates(
    published: Sequence[Published],
    totals: Sequence[Mapping[str, Any]],
    costs: Mapping[str, float],
    slos: Mapping[str, Slo | None],
) -> dict[str, Any]:
    failed = [p.business_date for p in published if not p.certified]
    return {
        "daily_totals": daily_totals_chart(totals),
        "service_levels": daily_service_levels(slos),
        "dagster/row_count": sum(p.rows for p in published),
        "business_dates": len(published),
        "new_versions": sum(p.version is not None for p in published),
        "failed_candidates": ", ".join(failed) or "none",
        "rows": sum(p.rows for p in published),
        "as_of_load_date": published[0].as_of_load_date if published else "",
        **costs,
    }


def reverification(verdict: Verdict) -> dict[str, Any]:
    return {
        "partitions_checked": verdict.checked,
        "mismatched": ", ".join(verdict.mismatched[:10]) or "none",
        "flagged SUSPECT": "; ".join(f"{k}: {r}" for k, r in list(verdict.reasons.items())[:10]) or "none",
    }


def check_results(asset: str, outcomes: Sequence[tuple[str, CheckOutcome]]) -> list[dg.AssetCheckResult]:
    """One result per check; over several partitions it passes only if it passed on each."""
    results = []
    for check in Check:
        mine = [(key, o) for key, o in outcomes if o.check is check]
        failed = [(key, o) for key, o in mine if not o.passed]
        meta: dict[str, Any] = dict(mine[0][1].metadata) if len(mine) == 1 else {"partitions": len(mine)}
        if failed:
            meta["failing_partitions"] = ", ".join(key for key, _ in failed[:10])
        summary = failed[0][1].summary if failed else (mine[0][1].summary if mine else "")
        results.append(
            dg.AssetCheckResult(
                asset_key=asset,
                check_name=check.value,
                passed=not failed,
                severity=dg.AssetCheckSeverity.ERROR,
                metadata=meta,
                description=summary,
            )
        )
    return results
