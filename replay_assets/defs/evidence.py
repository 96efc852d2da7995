"""Asset metadata a person reads in the Dagster UI: markdown tables for reconciliation, controls
and service levels, and a bar chart of daily totals (the UI renders markdown; no images needed)."""

from collections.abc import Mapping, Sequence
from typing import Any

import dagster as dg

from replay_assets.core.config import SloPolicy
from replay_assets.core.slo import Slo
from replay_assets.core.state import Counts

BAR_WIDTH = 24


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
