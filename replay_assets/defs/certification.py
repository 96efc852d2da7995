"""The certification report: every asset check, partitioned like its asset, and its results.

A partition's checks read as its report: the gate's six checks (blocking: a failure fails the
step), its service levels (a warning) and, for ``raw_receipts``, what landing verified. Each
result names its partition; a step over a range of partitions reports one evaluation per
partition (``for_partition``), never one for the whole range."""

from collections.abc import Mapping, Sequence
from typing import Any

import dagster as dg

from replay_assets.core.config import SloPolicy
from replay_assets.core.gate import Check, CheckOutcome
from replay_assets.core.receipts import ReceiptReconciliation
from replay_assets.core.slo import Slo
from replay_assets.defs import evidence
from replay_assets.storage.landing.ingest import Landed
from replay_assets.storage.publish.procedure import Verdict

SERVICE_LEVELS_CHECK = evidence.SERVICE_LEVELS_CHECK
MANIFEST_CHECK = "delivery_matches_manifest"
REJECTIONS_CHECK = "rejections_within_policy"
RECEIPTS_RECONCILIATION_CHECK = Check.RECONCILIATION.value  # the same property, of the landing

GATE_TEXT = {
    Check.SCHEMA: "Every column matches the pandera schema (types, ids, ranges, closed sets).",
    Check.UNIQUE_KEYS: "No key appears twice.",
    Check.RECONCILIATION: "Per batch: source_events = accepted + rejected + skipped (duplicate, stale).",
    Check.TOTALS: "Totals equal an independent SQL recomputation as of the candidate's load date.",
    Check.COMPLETENESS: "Every load date the candidate depends on is applied and certified.",
    Check.NON_NEGATIVE: "No negative amount, cost, quantity or units.",
}
LEVELS_TEXT = (
    "The partition's service levels against the policy: freshness, completeness, "
    "duration, availability. A warning, never a gate."
)


def gate_specs(asset: str, partitions: dg.PartitionsDefinition) -> list[dg.AssetCheckSpec]:
    """The publish gate as blocking checks, evaluated inside the building step (not after)."""
    gate = [
        dg.AssetCheckSpec(
            c.value, asset=asset, blocking=True, description=GATE_TEXT[c], partitions_def=partitions
        )
        for c in Check
    ]
    levels = dg.AssetCheckSpec(
        SERVICE_LEVELS_CHECK, asset=asset, description=LEVELS_TEXT, partitions_def=partitions
    )
    return [*gate, levels]


def landing_specs(partitions: dg.PartitionsDefinition) -> list[dg.AssetCheckSpec]:
    """What landing a load date verified, as the raw receipts' own checks."""
    return [
        dg.AssetCheckSpec(
            MANIFEST_CHECK,
            asset="raw_receipts",
            blocking=True,
            partitions_def=partitions,
            description="Every delivered file has the sha256 and event count its manifest declares "
            "(a delivery that does not is refused before anything lands).",
        ),
        dg.AssetCheckSpec(
            REJECTIONS_CHECK,
            asset="raw_receipts",
            partitions_def=partitions,
            description="Rejected events are kept with their reasons; a batch-level violation (the "
            "schema gate) blocks its batch from being applied.",
        ),
        dg.AssetCheckSpec(
            RECEIPTS_RECONCILIATION_CHECK,
            asset="raw_receipts",
            partitions_def=partitions,
            description="Read back once the landing committed, per delivered file: the events its "
            "manifest declares = the receipts kept = staged source events + rejected events + lines "
            "the schema gate refused. Not blocking: the apply's gate refuses a date that does not "
            "reconcile and keeps its candidate inspectable.",
        ),
    ]


def gate(
    asset: str, outcomes: Sequence[CheckOutcome], *, no_sales: bool = False
) -> list[dg.AssetCheckResult]:
    """One result per gate check of one partition; a date with no sales says so in each."""
    prefix = f"{evidence.NO_SALES}: nothing to certify; " if no_sales else ""
    return [
        dg.AssetCheckResult(
            asset_key=asset,
            check_name=o.check.value,
            passed=o.passed,
            severity=dg.AssetCheckSeverity.ERROR,
            metadata=dict(o.metadata),
            description=prefix + o.summary,
        )
        for o in outcomes
    ]


def service_levels(
    asset: str, key: str, slo: Slo | None, policy: SloPolicy, *, no_sales: bool = False
) -> list[dg.AssetCheckResult]:
    """The partition's service levels: a warning, never a gate. A date with no sales has none to
    measure and passes saying so; a candidate that failed its gate has none either, and the
    check is not evaluated (the gate's checks say why)."""
    if slo is None:
        return (
            [
                dg.AssetCheckResult(
                    asset_key=asset,
                    check_name=SERVICE_LEVELS_CHECK,
                    passed=True,
                    severity=dg.AssetCheckSeverity.WARN,
                    description=f"{evidence.NO_SALES}: no service levels to measure",
                    metadata={"partition": key, "missed": "none"},
                )
            ]
            if no_sales
            else []
        )
    return [
        dg.AssetCheckResult(
            asset_key=asset,
            check_name=SERVICE_LEVELS_CHECK,
            passed=slo.all_met,
            severity=dg.AssetCheckSeverity.WARN,
            description="every service level met" if slo.all_met else f"service levels missed for {key}",
            metadata={
                "partition": key,
                "missed": "none" if slo.all_met else key,
                "service_levels": evidence.service_levels(slo, policy),
                **evidence.slo_numbers(slo),
            },
        )
    ]


def landing(batches: Sequence[Landed], reconciled: ReceiptReconciliation) -> list[dg.AssetCheckResult]:
    rows = [(b.batch_id, b.source_events, b.rejected, b.violations, b.bytes_read, b.new) for b in batches]
    columns = [("batch", "string"), ("source_events", "int"), ("rejected", "int"), ("violations", "int")]
    per_batch = evidence.table([*columns, ("bytes_read", "int"), ("newly_landed", "bool")], rows)
    rejected, violations = sum(b.rejected for b in batches), sum(b.violations for b in batches)
    blocked = [b.batch_id for b in batches if b.violations]
    return [
        dg.AssetCheckResult(
            asset_key="raw_receipts",
            check_name=MANIFEST_CHECK,
            passed=True,
            description=f"{len(batches)} batches match their manifests (sha256 and event counts)",
            metadata={"batches": len(batches), "per_batch": per_batch},
        ),
        dg.AssetCheckResult(
            asset_key="raw_receipts",
            check_name=REJECTIONS_CHECK,
            passed=not blocked,
            severity=dg.AssetCheckSeverity.ERROR,
            description=(
                f"{rejected} events rejected and kept with their reasons"
                if not blocked
                else f"{violations} batch-level violations block {', '.join(blocked[:3])}"
            ),
            metadata={"rejected": rejected, "violations": violations},
        ),
        receipts_reconciliation(reconciled),
    ]


def receipts_reconciliation(r: ReceiptReconciliation) -> dg.AssetCheckResult:
    """The landed rows' reconciliation: plain counts, and the batches that do not add up by id."""
    metadata: dict[str, Any] = {
        "batches": r.batches,
        "files": r.files,
        "declared_events": r.declared,
        "receipts": r.receipts,
        "staged": r.staged,
        "rejected": r.rejected,
        "refused": r.refused,
        "unbalanced_files": len(r.unbalanced),
    }
    if r.unbalanced:
        metadata["unbalanced_batches"] = ", ".join(sorted({f.batch_id for f in r.unbalanced}))
    return dg.AssetCheckResult(
        asset_key="raw_receipts",
        check_name=RECEIPTS_RECONCILIATION_CHECK,
        passed=r.passed,
        severity=dg.AssetCheckSeverity.ERROR,
        description=r.summary(),
        metadata=metadata,
    )


def for_partition(
    results: Sequence[dg.AssetCheckResult], key: str, blocking: Mapping[str, bool]
) -> list[dg.AssetCheckEvaluation]:  # see design.md, "Certification report"
    """Results of one partition of a range step, as evaluations that name it (a result takes its
    partition from the step, and a range step has none)."""
    return [
        dg.AssetCheckEvaluation(
            asset_key=dg.AssetKey(r.asset_key.path if r.asset_key else []),
            check_name=str(r.check_name),
            passed=r.passed,
            metadata=r.metadata,
            severity=r.severity,
            description=r.description,
            blocking=blocking.get(str(r.check_name), False),
            partition=key,
        )
        for r in results
    ]


def reverification(verdict: Verdict) -> dg.AssetCheckResult:
    """The audit's verdict, its reason in the description (what the UI shows first)."""
    reasons = "; ".join(f"{k}: {r}" for k, r in list(verdict.reasons.items())[:3])
    description = (
        f"{verdict.checked} publications equal their recomputation"
        if not verdict.mismatched
        else f"{len(verdict.mismatched)} publications differ from their recomputation, flagged "
        f"SUSPECT: {reasons or ', '.join(verdict.mismatched[:3])}"
    )
    meta: dict[str, Any] = evidence.reverification(verdict)
    return dg.AssetCheckResult(
        passed=not verdict.mismatched,
        severity=dg.AssetCheckSeverity.ERROR,
        metadata=meta,
        description=description,
    )
