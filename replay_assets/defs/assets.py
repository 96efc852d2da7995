"""The assets. Each body is wiring: call the pipeline, describe the outcome for the UI."""

from collections.abc import Iterator
from contextlib import contextmanager

import dagster as dg

from replay_assets.core import schemas
from replay_assets.core.config import Settings
from replay_assets.core.errors import ErrorCode, ReplayError
from replay_assets.core.gate import Check
from replay_assets.core.lanes import BACKFILL, lane_for
from replay_assets.defs import certification, evidence
from replay_assets.defs.partitions import business_date_partitions, load_date_partitions
from replay_assets.defs.resources import ReplayResource
from replay_assets.storage.evidence import attempts as service
from replay_assets.storage.home import failpoints
from replay_assets.storage.publish.procedure import Published
from replay_assets.usecases.apply import apply
from replay_assets.usecases.context import Pipeline
from replay_assets.usecases.land import land
from replay_assets.usecases.operations import Operations
from replay_assets.usecases.publish import publish
from replay_assets.usecases.receipts import reconcile_landed

POOL = "duckdb_writer"
MAX_RETRIES = 2
TRANSIENT_CODES = frozenset({ErrorCode.WAREHOUSE_BUSY})


def backoff(settings: Settings) -> dg.RetryPolicy:
    """Transient failures are retried with an exponential backoff (Dagster's: before retry n,
    ``(2**n - 1) * retry_backoff_seconds``)."""
    return dg.RetryPolicy(
        max_retries=MAX_RETRIES, delay=settings.retry_backoff_seconds, backoff=dg.Backoff.EXPONENTIAL
    )


def retry_policy(settings: Settings) -> dg.RetryPolicy:
    """The policy Dagster applies. On a virtual clock (tests, the demo) Dagster waits nothing and
    the backoff is the virtual clock's advance instead (``_attempt``), so a replayed timeline shows
    the wait without anyone sleeping through it."""
    policy = backoff(settings)
    if settings.fixed_now is None:
        return policy
    return dg.RetryPolicy(max_retries=MAX_RETRIES, delay=0, backoff=policy.backoff)


def _wait_virtually(pipeline: Pipeline, attempt: int) -> None:
    """On a virtual clock, the backoff before the next attempt is the clock's advance."""
    if pipeline.clock is not None and attempt < MAX_RETRIES:
        pipeline.clock.sleep(backoff(pipeline.settings).calculate_delay(attempt + 1))


@contextmanager
def _attempt(context: dg.AssetExecutionContext, pipeline: Pipeline, step: str, key: str) -> Iterator[None]:
    """Evidence of every attempt of a step (started, failed with its code, succeeded), the
    backoff on a virtual clock, and the fail-once fault switch (``REPLAY_ASSETS_FAIL_ONCE``)."""
    ops, run_id, attempt = Operations(pipeline), context.run.run_id, context.retry_number
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
        if not isinstance(error, ReplayError):  # retried by the policy (``_fail`` decides the rest)
            _wait_virtually(pipeline, attempt)
        raise
    ops.record_step(run_id, step, key=key, attempt=attempt, outcome=service.SUCCEEDED, detail="")


def _costs(pipeline: Pipeline, context: dg.AssetExecutionContext, step: str) -> dict[str, float]:
    return {f"cost_{k}": v for k, v in Operations(pipeline).run_costs(context.run.run_id, step).items()}


def _fail(error: ReplayError, pipeline: Pipeline, attempt: int) -> Exception:
    """How a step ends on a ReplayError. A busy warehouse (another connection held the lock past
    the lock timeout, e.g. a long ``reconcile``) is transient: the step is retried within the
    retry budget, after the backoff. Any other code is a contract outcome (blocked, not ready,
    sealed): retrying cannot change it."""
    if error.code in TRANSIENT_CODES:
        _wait_virtually(pipeline, attempt)
        wait = retry_policy(pipeline.settings).calculate_delay(attempt + 1)
        return dg.RetryRequested(max_retries=MAX_RETRIES, seconds_to_wait=wait)
    return dg.Failure(description=str(error), metadata={"code": str(error.code)}, allow_retries=False)


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
            with _attempt(context, pipeline, "raw_receipts", context.partition_key):
                backfill = lane_for(context.run.tags) == BACKFILL  # may land a late delivery
                landed = land(pipeline, context.partition_key, context.run.run_id, sealed_ok=backfill)
                reconciled = reconcile_landed(pipeline, context.partition_key)  # read back, committed
        except ReplayError as error:
            raise _fail(error, pipeline, context.retry_number) from error
        return dg.MaterializeResult(
            metadata=evidence.landed(landed, _costs(pipeline, context, "land")),
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
            ),
            dg.AssetSpec(
                "current_customers",
                deps=state_deps,
                group_name="replay",
                kinds={*kinds, "pandera"},
                metadata={"dagster/column_schema": evidence.column_schema(schemas.CUSTOMER_RULE)},
                description="Customers as of each load date.",
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
    ) -> Iterator[dg.MaterializeResult]:  # type: ignore[type-arg]  # see docs/facts.md
        """State as of this load date = state as of the day before + this date's accepted events,
        in one transaction; refuses a load date whose predecessor is not applied."""
        pipeline, key = replay.pipeline(), context.partition_key
        try:
            with _attempt(context, pipeline, "current_state", key):
                backfill = lane_for(context.run.tags) == BACKFILL
                result = apply(pipeline, key, context.run.run_id, sealed_ok=backfill)
                failpoints.hit(pipeline.settings.fail_point, "state.after_commit")
        except ReplayError as error:
            raise _fail(error, pipeline, context.retry_number) from error
        slo, policy = Operations(pipeline).slo(key), pipeline.settings.slo
        yield dg.MaterializeResult(
            asset_key="current_orders",
            metadata=evidence.state(result, slo, policy, _costs(pipeline, context, "apply")),
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
            with _attempt(context, pipeline, "daily_aggregates", f"{keys[0]}..{keys[-1]}"):
                published = publish(pipeline, keys, context.run.run_id)
        except ReplayError as error:
            raise _fail(error, pipeline, context.retry_number) from error
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
