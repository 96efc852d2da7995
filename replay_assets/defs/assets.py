"""The assets. Each body is wiring: call the pipeline, describe the outcome for the UI."""

from collections.abc import Iterator

import dagster as dg

from replay_assets.core import schemas
from replay_assets.core.config import Settings
from replay_assets.core.errors import ReplayError
from replay_assets.core.gate import Check
from replay_assets.core.lanes import BACKFILL, lane_for
from replay_assets.defs import certification, evidence
from replay_assets.defs.catch_up import catch_up
from replay_assets.defs.partitions import business_date_partitions, load_date_partitions
from replay_assets.defs.resources import ReplayResource
from replay_assets.defs.steps import (
    MAX_RETRIES,
    POOL,
    backoff,
    retry_policy,
    step_attempt,
    step_costs,
    step_failure,
)
from replay_assets.storage.home import failpoints
from replay_assets.storage.publish.procedure import Published
from replay_assets.usecases.apply import apply
from replay_assets.usecases.context import Pipeline
from replay_assets.usecases.land import land
from replay_assets.usecases.operations import Operations
from replay_assets.usecases.publish import publish
from replay_assets.usecases.receipts import reconcile_landed

__all__ = ["MAX_RETRIES", "POOL", "backoff", "build_assets", "build_reverification_checks", "retry_policy"]


def _kinds(settings: Settings) -> set[str]:
    return {"duckdb" if settings.warehouse == "duckdb" else "spark", "polars"}


def build_assets(settings: Settings) -> list[dg.AssetsDefinition]:
    load_dates = load_date_partitions(settings)
    business_dates = business_date_partitions(settings)
    previous_day = dg.TimeWindowPartitionMapping(start_offset=-1, end_offset=-1)
    retries, kinds = retry_policy(settings), _kinds(settings)

    @dg.asset(
        partitions_def=load_dates,
        pool=POOL,
        retry_policy=retries,
        group_name="replay",
        kinds=kinds,
        check_specs=certification.landing_specs(load_dates),
    )
    def raw_receipts(context: dg.AssetExecutionContext, replay: ReplayResource) -> dg.MaterializeResult:  # type: ignore[type-arg]
        """Lands the ready deliveries of this load date: sha256 and event counts verified,
        every line kept as an immutable receipt, rejected events kept with their reasons.
        Evidence, not certified data."""
        pipeline = replay.pipeline()
        try:
            with step_attempt(context, pipeline, "raw_receipts", context.partition_key):
                backfill = lane_for(context.run.tags) == BACKFILL  # may land a late delivery
                landed = land(pipeline, context.partition_key, context.run.run_id, sealed_ok=backfill)
                reconciled = reconcile_landed(pipeline, context.partition_key)  # read back, committed
        except ReplayError as error:
            raise step_failure(error, pipeline, context.retry_number) from error
        return dg.MaterializeResult(
            metadata=evidence.landed(landed, step_costs(pipeline, context, "land")),
            check_results=certification.landing(landed, reconciled),
        )

    state_deps = [dg.AssetDep("raw_receipts"), dg.AssetDep("current_orders", partition_mapping=previous_day)]

    @dg.multi_asset(
        specs=[
            dg.AssetSpec(
                "current_orders",
                deps=state_deps,
                group_name="replay",
                kinds={*kinds, "pandera"},
                metadata={"dagster/column_schema": evidence.column_schema(schemas.ORDER_RULE)},
                description="Order lines as of each load date: highest version wins, "
                "deletes kept as tombstones.",
                skippable=True,  # a catch-up run materializes each load date on its own (below)
            ),
            dg.AssetSpec(
                "current_customers",
                deps=state_deps,
                group_name="replay",
                kinds={*kinds, "pandera"},
                metadata={"dagster/column_schema": evidence.column_schema(schemas.CUSTOMER_RULE)},
                description="Customers as of each load date.",
                skippable=True,
            ),
        ],
        partitions_def=load_dates,
        pool=POOL,
        retry_policy=retries,
        can_subset=False,
        check_specs=certification.gate_specs("current_orders", load_dates),
    )
    def current_state(
        context: dg.AssetExecutionContext, replay: ReplayResource
    ) -> Iterator[object]:  # materializations and check evaluations, per load date in a catch-up run
        """State as of this load date = state as of the day before + this date's accepted events,
        in one transaction; refuses a load date whose predecessor is not applied. A catch-up run
        (a range of ready load dates) lands and applies each date in order, each reported on its
        own."""
        if context.has_partition_key_range and len(context.partition_keys) > 1:
            yield from catch_up(context, replay.pipeline())
            return
        pipeline, key = replay.pipeline(), context.partition_key
        try:
            with step_attempt(context, pipeline, "current_state", key):
                backfill = lane_for(context.run.tags) == BACKFILL
                result = apply(pipeline, key, context.run.run_id, sealed_ok=backfill)
                failpoints.hit(pipeline.settings.fail_point, "state.after_commit")
        except ReplayError as error:
            raise step_failure(error, pipeline, context.retry_number) from error
        slo, policy = Operations(pipeline).slo(key), pipeline.settings.slo
        yield dg.MaterializeResult(
            asset_key="current_orders",
            metadata=evidence.state(result, slo, policy, step_costs(pipeline, context, "apply")),
            check_results=[
                *certification.gate("current_orders", result.checks),
                *certification.service_levels("current_orders", key, slo, policy),
            ],
        )
        yield dg.MaterializeResult(asset_key="current_customers", metadata={"outcome": result.status.value})

    @dg.asset(
        partitions_def=business_dates,
        pool=POOL,
        retry_policy=retries,
        group_name="replay",
        kinds={*kinds, "pandera"},
        metadata={"dagster/column_schema": evidence.column_schema(schemas.AGGREGATES_RULE)},
        deps=[dg.AssetDep("current_orders", partition_mapping=dg.LastPartitionMapping())],
        backfill_policy=dg.BackfillPolicy.single_run(),
        check_specs=certification.gate_specs("daily_aggregates", business_dates),
        output_required=False,  # each business date is materialized on its own (below)
    )
    def daily_aggregates(context: dg.AssetExecutionContext, replay: ReplayResource) -> Iterator[object]:
        """Per store and business date over active lines, recomputed from state as of the latest
        applied load date; a new version is published only when the content changed. A range
        run reports each business date on its own: its materialization and its checks."""
        pipeline = replay.pipeline()
        keys = list(context.partition_keys)
        try:
            with step_attempt(context, pipeline, "daily_aggregates", f"{keys[0]}..{keys[-1]}"):
                published = publish(pipeline, keys, context.run.run_id)
        except ReplayError as error:
            raise step_failure(error, pipeline, context.retry_number) from error
        yield from _per_business_date(context, pipeline, published, keys)

    return [raw_receipts, current_state, daily_aggregates]


def _per_business_date(
    context: dg.AssetExecutionContext, pipeline: Pipeline, published: list[Published], keys: list[str]
) -> Iterator[object]:
    """Each published business date's materialization and check evaluations, naming it."""
    ops, policy = Operations(pipeline), pipeline.settings.slo
    totals = {t["business_date"]: t for t in ops.daily_totals(keys[0], keys[-1])}
    slos = ops.daily_slos([p.business_date for p in published])
    blocking = {c.value: True for c in Check}
    for p in published:
        day, slo = p.business_date, slos.get(p.business_date)
        yield dg.AssetMaterialization(
            "daily_aggregates", partition=day, metadata=evidence.daily(p, totals.get(day), slo, policy)
        )
        results = [
            *certification.gate("daily_aggregates", p.checks, no_sales=_no_sales(p)),
            *certification.service_levels("daily_aggregates", day, slo, policy, no_sales=_no_sales(p)),
        ]
        yield from certification.for_partition(results, day, blocking)
    for key in context.selected_asset_check_keys:  # each check's output, once for the range
        yield dg.Output(None, output_name=context.assets_def.get_output_name_for_asset_check_key(key))


def _no_sales(published: Published) -> bool:
    return not published.rows and published.certified


def build_reverification_checks() -> list[dg.AssetChecksDefinition]:
    """Stand-alone audits: each published partition recomputed from history as of its own load
    date. Non-blocking; they report, the gate inside the building step decides."""

    def make(asset: str) -> dg.AssetChecksDefinition:
        @dg.asset_check(
            asset=asset,
            name="publications_match_recomputation",
            blocking=False,
            pool=POOL,
            description="Every published version equals a recomputation as of its load date.",
        )
        def check(replay: ReplayResource) -> dg.AssetCheckResult:
            return certification.reverification(Operations(replay.pipeline()).reverify(asset))

        return check

    return [make("current_orders"), make("daily_aggregates")]
