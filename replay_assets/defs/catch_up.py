"""A catch-up run: several ready load dates in one Dagster run (a partition range of the state),
each landed and applied in date order through the same use cases as a run of its own, so each
date is its own landing transaction and journaled application (its own fence, certification
and publication record). Each date is reported on its own: ``raw_receipts`` and the state's
materializations and checks name it. The published copy is refreshed once, after the last date
or the first that fails: the dates before it stay applied and published, nothing of it shows."""

from collections.abc import Generator, Iterator

import dagster as dg

from replay_assets.core.errors import ReplayError
from replay_assets.core.gate import Check
from replay_assets.core.lanes import BACKFILL, lane_for
from replay_assets.core.status import ApplyOutcome
from replay_assets.defs import certification, evidence
from replay_assets.defs.steps import step_attempt, step_costs, step_failure
from replay_assets.storage.apply.load_date import ApplyResult
from replay_assets.storage.evidence.written_once import SUCCEEDED
from replay_assets.storage.home import failpoints
from replay_assets.usecases.apply import apply
from replay_assets.usecases.context import Pipeline
from replay_assets.usecases.land import land
from replay_assets.usecases.operations import Operations
from replay_assets.usecases.receipts import reconcile_landed
from replay_assets.usecases.recover import refresh_published

CATCH_UP_JOB = "catch_up_load_dates_job"
GATE_BLOCKING = {c.value: True for c in Check}
Costs = dict[tuple[str, str], dict[str, float]]  # the run's cost totals by step after each date


def catch_up(context: dg.AssetExecutionContext, pipeline: Pipeline) -> Iterator[object]:
    """Each load date of the run's range in order: landed, applied, reported; the published copy
    refreshed once at the end (also when a date fails). A date that fails its gate ends the run
    failed, as its own run would; the dates after it wait for the next run."""
    done = _done_before(context, pipeline)
    # a date's costs are the run's totals less those before it: an earlier attempt's are not its
    seen: Costs = (
        {(context.run.run_id, step): step_costs(pipeline, context, step) for step in ("land", "apply")}
        if context.retry_number
        else {}
    )
    try:
        for key in sorted(context.partition_keys):
            if ("current_state", key) in done:  # an earlier attempt of this run applied and reported it
                continue
            result = yield from _one_date(context, pipeline, key, seen, landed=("raw_receipts", key) in done)
            if result.status is ApplyOutcome.FAILED_CANDIDATE:
                raise dg.Failure(
                    description=f"load date {key} failed its gate: {result.reasons[0]}",
                    metadata={"code": "FAILED_CANDIDATE"},
                    allow_retries=False,
                )
    finally:
        refresh_published(pipeline)
    for check in context.selected_asset_check_keys:  # each check's output, once for the range
        yield dg.Output(None, output_name=context.assets_def.get_output_name_for_asset_check_key(check))


def _done_before(context: dg.AssetExecutionContext, pipeline: Pipeline) -> set[tuple[str, str]]:
    """The steps and dates an earlier attempt of this run finished (and reported): a retry after a
    transient failure goes on from the date that failed instead of reporting the others again."""
    if not context.retry_number:
        return set()
    attempts = Operations(pipeline).step_attempts(context.run.run_id)
    return {(step, key) for step, key, _attempt, outcome, _detail in attempts if outcome == SUCCEEDED}


def _one_date(
    context: dg.AssetExecutionContext, pipeline: Pipeline, key: str, seen: Costs, *, landed: bool
) -> Generator[object, None, ApplyResult]:
    """One load date, as its own run would land, apply and report it (``landed``: an earlier
    attempt of this run landed and reported its deliveries already)."""
    run_id, sealed_ok = context.run.run_id, lane_for(context.run.tags) == BACKFILL
    partitions = context.assets_def.partitions_def
    assert partitions is not None
    landing_blocking = {s.name: s.blocking for s in certification.landing_specs(partitions)}
    try:
        if not landed:
            yield from _land(context, pipeline, key, seen, blocking=landing_blocking)
        with step_attempt(context, pipeline, "current_state", key):
            result = apply(pipeline, key, run_id, sealed_ok, refresh=False)
            failpoints.hit(pipeline.settings.fail_point, "state.after_commit")
    except ReplayError as error:
        raise step_failure(error, pipeline, context.retry_number) from error
    slo, policy = Operations(pipeline).slo(key), pipeline.settings.slo
    costs = _date_costs(pipeline, context, "apply", seen)
    yield dg.AssetMaterialization(
        "current_orders", partition=key, metadata=evidence.state(result, slo, policy, costs)
    )
    yield dg.AssetMaterialization(
        "current_customers", partition=key, metadata={"outcome": result.status.value}
    )
    results = [
        *certification.gate("current_orders", result.checks),
        *certification.service_levels("current_orders", key, slo, policy),
    ]
    yield from certification.for_partition(results, key, GATE_BLOCKING)
    return result


def _land(
    context: dg.AssetExecutionContext, pipeline: Pipeline, key: str, seen: Costs, *, blocking: dict[str, bool]
) -> Iterator[object]:
    run_id, sealed_ok = context.run.run_id, lane_for(context.run.tags) == BACKFILL
    with step_attempt(context, pipeline, "raw_receipts", key):
        landed = land(pipeline, key, run_id, sealed_ok=sealed_ok)
        reconciled = reconcile_landed(pipeline, key)
    costs = _date_costs(pipeline, context, "land", seen)
    yield dg.AssetMaterialization("raw_receipts", partition=key, metadata=evidence.landed(landed, costs))
    yield from certification.for_partition(certification.landing(landed, reconciled), key, blocking)


def _date_costs(
    pipeline: Pipeline, context: dg.AssetExecutionContext, step: str, seen: Costs
) -> dict[str, float]:
    """This date's share of the run's costs of ``step``: the run's totals less those after the
    dates before it."""
    totals = step_costs(pipeline, context, step)
    before = seen.get((context.run.run_id, step), {})
    seen[(context.run.run_id, step)] = totals
    return {k: round(v - before.get(k, 0.0), 3) for k, v in totals.items()}
