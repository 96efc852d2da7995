"""Every piece of asset metadata a person reads in the Dagster UI, built here so the asset bodies
stay wiring. Tables are Dagster's own (``MetadataValue.table`` with a ``TableSchema``, rendered as
tables and typed), numbers are plain ints and floats (the Plots of the asset's Overview draw
them per partition), and each partition carries only its own values."""

from collections.abc import Mapping, Sequence
from typing import Any

import dagster as dg

from replay_assets.core.config import SloPolicy
from replay_assets.core.schemas import TableRule
from replay_assets.core.slo import Slo
from replay_assets.core.state import Counts
from replay_assets.storage.apply.load_date import ApplyResult
from replay_assets.storage.landing.ingest import Landed
from replay_assets.storage.publish.procedure import Published, Verdict

NO_SALES = "no sales"
SERVICE_LEVELS_CHECK = "service_levels_met"

Column = tuple[str, str]  # name, Dagster column type ("string", "int", "float", "bool")


def table(columns: Sequence[Column], rows: Sequence[Sequence[Any]]) -> dg.MetadataValue:
    """A typed table: each row's values in the order of ``columns``."""
    schema = dg.TableSchema(columns=[dg.TableColumn(name, type=kind) for name, kind in columns])
    records = [dg.TableRecord(dict(zip((n for n, _ in columns), row, strict=True))) for row in rows]
    return dg.MetadataValue.table(records, schema=schema)


def column_schema(rule: TableRule) -> dg.TableSchema:
    """``dagster/column_schema`` of an asset, from the column rules its pandera checks are built
    from, so the UI's column list and the gate never disagree."""
    return dg.TableSchema(
        columns=[
            dg.TableColumn(
                name,
                type=column.dtype,
                constraints=dg.TableColumnConstraints(
                    nullable=column.nullable,
                    other=[text] if (text := column.check_text()) else [],
                ),
            )
            for name, column in rule.columns.items()
        ]
    )


RECONCILIATION = (
    ("batch", "string"),
    ("source_events", "int"),
    ("accepted", "int"),
    ("rejected", "int"),
    ("skipped_duplicate", "int"),
    ("skipped_stale", "int"),
    ("adds_up", "bool"),
)


def reconciliation(counts: Mapping[str, Counts]) -> dg.MetadataValue:
    rows = [
        (
            batch,
            c.source_events,
            c.accepted,
            c.rejected,
            c.skipped_duplicate,
            c.skipped_stale,
            c.balanced(),
        )
        for batch, c in sorted(counts.items())
    ]
    return table(RECONCILIATION, rows)


CONTROLS = ("active_lines", "distinct_orders", "units", "amount_minor", "cost_minor", "gross_profit_minor")


def controls(values: tuple[int, ...]) -> dg.MetadataValue:
    return table([(name, "int") for name in CONTROLS], [values])


def service_levels(slo: Slo, policy: SloPolicy) -> dg.MetadataValue:
    """One row per service level: measured, target and whether it was met (empty: not measured)."""
    rows = [
        ("freshness", slo.freshness_minutes, "min", f"<= {policy.freshness_minutes:g}", slo.freshness_met),
        ("completeness", slo.completeness_pct, "%", f">= {policy.completeness_pct:g}", slo.completeness_met),
        ("duration", slo.duration_minutes, "min", f"<= {policy.duration_minutes:g}", slo.duration_met),
        (
            "availability",
            slo.availability_minutes,
            "min",
            f"<= {policy.availability_minutes:g}",
            slo.availability_met,
        ),
    ]
    columns = [("service_level", "string"), ("measured", "float"), ("unit", "string")]
    return table([*columns, ("target", "string"), ("met", "bool")], rows)


def slo_numbers(slo: Slo | None) -> dict[str, float]:
    """The measured service levels as plain numbers (plotted per partition)."""
    if slo is None:
        return {}
    measured = {
        "freshness_minutes": slo.freshness_minutes,
        "completeness_pct": slo.completeness_pct,
        "duration_minutes": slo.duration_minutes,
        "availability_minutes": slo.availability_minutes,
    }
    return {f"slo_{k}": float(v) for k, v in measured.items() if v is not None}


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
    meta: dict[str, Any] = {
        "outcome": result.status.value,
        "content_sha256": result.content_sha256 or "",
        "accepted": sum(c.accepted for c in counts),
        "skipped_duplicate": sum(c.skipped_duplicate for c in counts),
        "skipped_stale": sum(c.skipped_stale for c in counts),
        "rejected": sum(c.rejected for c in counts),
        "affected_business_dates": ", ".join(result.affected_business_dates),
        "dagster/row_count": result.row_count,
        "controls (lines, orders, units, amount, cost, profit)": str(values),
        **dict(zip(CONTROLS, values, strict=True)),
        "controls": controls(values) if values else "none (not certified)",
        "reconciliation": reconciliation(result.counts),
        **costs,
        **slo_numbers(slo),
    }
    if slo:
        meta["service_levels"] = service_levels(slo, policy)
    return meta


TOTALS = (("business_date", "string"), ("order_count", "int"), ("amount_minor", "int"))


def daily(
    published: Published, totals: Mapping[str, Any] | None, slo: Slo | None, policy: SloPolicy
) -> dict[str, Any]:
    """One business date's materialization: its own totals, version and service levels."""
    sums = {k: int(totals[k]) if totals else 0 for k in ("order_count", "amount_minor", "gross_profit_minor")}
    meta: dict[str, Any] = {
        "sales": NO_SALES if not published.rows else "yes",
        "certified": published.certified and published.rows > 0,
        "publication": _publication(published),
        "content_sha256": published.content_sha256,
        "as_of_load_date": published.as_of_load_date,
        "dagster/row_count": published.rows,
        "rows": published.rows,
        **sums,
        "daily_totals": table(
            [*TOTALS, ("gross_profit_minor", "int")], [(published.business_date, *sums.values())]
        ),
        **slo_numbers(slo),
    }
    if slo:
        meta["service_levels"] = service_levels(slo, policy)
    return meta


def _publication(published: Published) -> str:
    if published.version is not None:
        return f"version {published.version}"
    if not published.certified:
        return "none (failed candidate)"
    return f"none ({NO_SALES})" if not published.rows else "none (unchanged)"


def reverification(verdict: Verdict) -> dict[str, Any]:
    return {
        "partitions_checked": verdict.checked,
        "mismatched": ", ".join(verdict.mismatched[:10]) or "none",
        "flagged SUSPECT": "; ".join(f"{k}: {r}" for k, r in list(verdict.reasons.items())[:10]) or "none",
    }
