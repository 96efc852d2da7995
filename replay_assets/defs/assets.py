"""The assets. Each body is wiring: call the pipeline, describe the outcome for the UI."""

from collections.abc import Iterator

import dagster as dg

from replay_assets.core.config import Settings
from replay_assets.core.errors import ReplayError
from replay_assets.defs.partitions import business_date_partitions, load_date_partitions
from replay_assets.defs.resources import ReplayResource
from replay_assets.storage import failpoints

POOL = "duckdb_writer"
TRANSIENT_RETRY = dg.RetryPolicy(max_retries=2, delay=1)


def _fail(error: ReplayError) -> dg.Failure:
    """A contract outcome (blocked, not ready, sealed): retrying cannot change it."""
    return dg.Failure(description=str(error), metadata={"code": str(error.code)}, allow_retries=False)


def build_assets(settings: Settings) -> list[dg.AssetsDefinition]:
    load_dates = load_date_partitions(settings)
    business_dates = business_date_partitions(settings)
    previous_day = dg.TimeWindowPartitionMapping(start_offset=-1, end_offset=-1)

    @dg.asset(partitions_def=load_dates, pool=POOL, retry_policy=TRANSIENT_RETRY, group_name="replay")
    def raw_receipts(context: dg.AssetExecutionContext, replay: ReplayResource) -> dg.MaterializeResult:
        """Lands the ready deliveries of this load date: sha256 and event counts verified,
        every line kept as an immutable receipt, rejected events kept with their reasons.
        Evidence, not certified data."""
        try:
            landed = replay.pipeline().land(context.partition_key)
        except ReplayError as error:
            raise _fail(error) from error
        return dg.MaterializeResult(
            metadata={
                "batches": len(landed),
                "newly_landed": sum(b.new for b in landed),
                "source_events": sum(b.source_events for b in landed),
                "rejected": sum(b.rejected for b in landed),
                "bytes_read": sum(b.bytes_read for b in landed),
            }
        )

    state_deps = [dg.AssetDep("raw_receipts"), dg.AssetDep("current_orders", partition_mapping=previous_day)]

    @dg.multi_asset(
        specs=[
            dg.AssetSpec(
                "current_orders",
                deps=state_deps,
                group_name="replay",
                description="Order lines as of each load date: highest version wins, "
                "deletes kept as tombstones.",
            ),
            dg.AssetSpec(
                "current_customers",
                deps=state_deps,
                group_name="replay",
                description="Customers as of each load date.",
            ),
        ],
        partitions_def=load_dates,
        pool=POOL,
        retry_policy=TRANSIENT_RETRY,
        can_subset=False,
    )
    def current_state(
        context: dg.AssetExecutionContext, replay: ReplayResource
    ) -> Iterator[dg.MaterializeResult]:
        """State as of this load date = state as of the day before + this date's accepted events,
        in one transaction; refuses a load date whose predecessor is not applied."""
        pipeline = replay.pipeline()
        try:
            result = pipeline.apply(context.partition_key, context.run.run_id)
        except ReplayError as error:
            raise _fail(error) from error
        failpoints.hit(pipeline.settings.fail_point, "state.after_commit")
        counts = result.counts.values()
        controls = result.controls.as_tuple() if result.controls else ()
        meta = {
            "outcome": result.status.value,
            "content_sha256": result.content_sha256 or "",
            "accepted": sum(c.accepted for c in counts),
            "skipped_duplicate": sum(c.skipped_duplicate for c in counts),
            "skipped_stale": sum(c.skipped_stale for c in counts),
            "rejected": sum(c.rejected for c in counts),
            "affected_business_dates": ", ".join(result.affected_business_dates),
            "controls (lines, orders, units, amount, cost, profit)": str(controls),
        }
        yield dg.MaterializeResult(asset_key="current_orders", metadata=meta)
        yield dg.MaterializeResult(asset_key="current_customers", metadata={"outcome": result.status.value})

    @dg.asset(
        partitions_def=business_dates,
        pool=POOL,
        retry_policy=TRANSIENT_RETRY,
        group_name="replay",
        deps=[dg.AssetDep("current_orders", partition_mapping=dg.LastPartitionMapping())],
        backfill_policy=dg.BackfillPolicy.single_run(),
    )
    def daily_aggregates(context: dg.AssetExecutionContext, replay: ReplayResource) -> dg.MaterializeResult:
        """Per store and business date over active lines, recomputed from state as of the latest
        applied load date; a new version is published only when the content changed."""
        published = replay.pipeline().publish(list(context.partition_keys), context.run.run_id)
        return dg.MaterializeResult(
            metadata={
                "business_dates": len(published),
                "new_versions": sum(p.new_version for p in published),
                "rows": sum(p.rows for p in published),
            }
        )

    return [raw_receipts, current_state, daily_aggregates]
