"""The assets. Each body is wiring: call the pipeline, describe the outcome for the UI."""

from collections.abc import Iterator
from contextlib import contextmanager

import dagster as dg

from replay_assets.core.config import Settings
from replay_assets.core.errors import ErrorCode, ReplayError
from replay_assets.core.gate import Check
from replay_assets.core.lanes import BACKFILL, lane_for
from replay_assets.defs import evidence
from replay_assets.defs.partitions import business_date_partitions, load_date_partitions
from replay_assets.defs.resources import ReplayResource
from replay_assets.storage.db import failpoints
from replay_assets.storage.evidence import attempts as service
from replay_assets.usecases.apply import apply
from replay_assets.usecases.context import Pipeline
from replay_assets.usecases.land import land
from replay_assets.usecases.operations import Operations
from replay_assets.usecases.publish import publish

POOL = "duckdb_writer"
# Transient failures are retried; the backoff is waited on the pipeline's clock (see _attempt), so
# the virtual clock of tests and the demo advances instead of sleeping.
TRANSIENT_RETRY = dg.RetryPolicy(max_retries=2)
TRANSIENT_CODES = frozenset({ErrorCode.WAREHOUSE_BUSY})


@contextmanager
def _attempt(context: dg.AssetExecutionContext, pipeline: Pipeline, step: str, key: str) -> Iterator[None]:
    """Evidence of every attempt of a step (started, failed with its code, succeeded), the
    retry backoff, and the fail-once fault switch (``REPLAY_ASSETS_FAIL_ONCE``)."""
    ops, run_id, attempt = Operations(pipeline), context.run.run_id, context.retry_number
    if attempt:
        pipeline.sleep(pipeline.settings.retry_backoff_seconds * 2 ** (attempt - 1))
    ops.record_step(run_id, step, key=key, attempt=attempt, outcome=service.STARTED, detail="")
    try:
        failpoints.fail_once(
            pipeline.settings.fail_once, pipeline.settings.home, step=step, partition_key=key, point="before"
        )
        yield
        failpoints.fail_once(
            pipeline.settings.fail_once,
            pipeline.settings.home,
            step=step,
            partition_key=key,
            point="after_commit",
        )
    except Exception as error:
        code = str(error.code) if isinstance(error, ReplayError) else type(error).__name__
        ops.record_step(run_id, step, key=key, attempt=attempt, outcome=service.FAILED, detail=code)
        raise
    ops.record_step(run_id, step, key=key, attempt=attempt, outcome=service.SUCCEEDED, detail="")


def _costs(pipeline: Pipeline, context: dg.AssetExecutionContext, step: str) -> dict[str, float]:
    return {f"cost_{k}": v for k, v in Operations(pipeline).run_costs(context.run.run_id, step).items()}


def _check_specs(asset: str) -> list[dg.AssetCheckSpec]:
    """The publish gate as blocking checks: evaluated inside the building step (not after)."""
    gate = [dg.AssetCheckSpec(c.value, asset=asset, blocking=True, description=GATE_TEXT[c]) for c in Check]
    levels = dg.AssetCheckSpec(
        evidence.SERVICE_LEVELS_CHECK,
        asset=asset,
        description="The partition's service levels against the policy (SPEC 7): freshness, "
        "completeness, duration, availability. A warning, never a gate.",
    )
    return [*gate, levels]


GATE_TEXT = {
    Check.SCHEMA: "Every column matches the pandera schema (types, ids, ranges, closed sets).",
    Check.UNIQUE_KEYS: "No key appears twice.",
    Check.RECONCILIATION: "Per batch: source_events = accepted + rejected + skipped (duplicate, stale).",
    Check.TOTALS: "Totals equal an independent SQL recomputation as of the candidate's load date.",
    Check.COMPLETENESS: "Every load date the candidate depends on is applied and certified.",
    Check.NON_NEGATIVE: "No negative amount, cost, quantity or units.",
}


def _fail(error: ReplayError) -> Exception:
    """How a step ends on a ReplayError. A busy warehouse (another connection held the lock past
    the lock timeout, e.g. a long ``reconcile``) is transient: the step is retried within the
    transient policy's budget, after the backoff ``_attempt`` waits on the pipeline's clock. Any
    other code is a contract outcome (blocked, not ready, sealed): retrying cannot change it."""
    if error.code in TRANSIENT_CODES:
        return dg.RetryRequested(max_retries=TRANSIENT_RETRY.max_retries)
    return dg.Failure(description=str(error), metadata={"code": str(error.code)}, allow_retries=False)


def build_assets(settings: Settings) -> list[dg.AssetsDefinition]:
    load_dates = load_date_partitions(settings)
    business_dates = business_date_partitions(settings)
    previous_day = dg.TimeWindowPartitionMapping(start_offset=-1, end_offset=-1)

    @dg.asset(partitions_def=load_dates, pool=POOL, retry_policy=TRANSIENT_RETRY, group_name="replay")
    def raw_receipts(context: dg.AssetExecutionContext, replay: ReplayResource) -> dg.MaterializeResult:  # type: ignore[type-arg]
        """Lands the ready deliveries of this load date: sha256 and event counts verified,
        every line kept as an immutable receipt, rejected events kept with their reasons.
        Evidence, not certified data."""
        pipeline = replay.pipeline()
        try:
            with _attempt(context, pipeline, "raw_receipts", context.partition_key):
                backfill = lane_for(context.run.tags) == BACKFILL  # may land a late delivery
                landed = land(pipeline, context.partition_key, context.run.run_id, sealed_ok=backfill)
        except ReplayError as error:
            raise _fail(error) from error
        return dg.MaterializeResult(metadata=evidence.landed(landed, _costs(pipeline, context, "land")))

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
        check_specs=_check_specs("current_orders"),
    )
    def current_state(
        context: dg.AssetExecutionContext, replay: ReplayResource
    ) -> Iterator[dg.MaterializeResult]:  # type: ignore[type-arg]  # see design.md
        """State as of this load date = state as of the day before + this date's accepted events,
        in one transaction; refuses a load date whose predecessor is not applied."""
        pipeline = replay.pipeline()
        try:
            with _attempt(context, pipeline, "current_state", context.partition_key):
                backfill = lane_for(context.run.tags) == BACKFILL
                result = apply(pipeline, context.partition_key, context.run.run_id, sealed_ok=backfill)
                failpoints.hit(pipeline.settings.fail_point, "state.after_commit")
        except ReplayError as error:
            raise _fail(error) from error
        slo = Operations(pipeline).slo(context.partition_key)
        meta = evidence.state(result, slo, pipeline.settings.slo, _costs(pipeline, context, "apply"))
        checks = [(context.partition_key, o) for o in result.checks]
        levels = evidence.slo_checks("current_orders", {context.partition_key: slo}, pipeline.settings.slo)
        yield dg.MaterializeResult(
            asset_key="current_orders",
            metadata=meta,
            check_results=[*evidence.check_results("current_orders", checks), *levels],
        )
        yield dg.MaterializeResult(asset_key="current_customers", metadata={"outcome": result.status.value})

    @dg.asset(
        partitions_def=business_dates,
        pool=POOL,
        retry_policy=TRANSIENT_RETRY,
        group_name="replay",
        deps=[dg.AssetDep("current_orders", partition_mapping=dg.LastPartitionMapping())],
        backfill_policy=dg.BackfillPolicy.single_run(),
        check_specs=_check_specs("daily_aggregates"),
    )
    def daily_aggregates(context: dg.AssetExecutionContext, replay: ReplayResource) -> dg.MaterializeResult:  # type: ignore[type-arg]
        """Per store and business date over active lines, recomputed from state as of the latest
        applied load date; a new version is published only when the content changed."""
        pipeline = replay.pipeline()
        keys = list(context.partition_keys)
        with _attempt(context, pipeline, "daily_aggregates", f"{keys[0]}..{keys[-1]}"):
            published = publish(pipeline, keys, context.run.run_id)
        ops = Operations(pipeline)
        totals = ops.daily_totals(keys[0], keys[-1])
        slos = ops.daily_slos([p.business_date for p in published])
        costs = _costs(pipeline, context, "publish")
        gate = evidence.check_results(
            "daily_aggregates", [(p.business_date, o) for p in published for o in p.checks]
        )
        return dg.MaterializeResult(
            metadata=evidence.aggregates(published, totals, costs, slos),
            check_results=[*gate, *evidence.slo_checks("daily_aggregates", slos, pipeline.settings.slo)],
        )

    return [raw_receipts, current_state, daily_aggregates]


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
            verdict = Operations(replay.pipeline()).reverify(asset)
            return dg.AssetCheckResult(
                passed=not verdict.mismatched,
                severity=dg.AssetCheckSeverity.ERROR,
                metadata=evidence.reverification(verdict),
            )

        return check

    return [make("current_orders"), make("daily_aggregates")]
