"""What every step of the pipeline does around its use case: evidence of each attempt, the
retry policy and its backoff (on a virtual clock too), and how a ``ReplayError`` ends a step."""

from collections.abc import Iterator
from contextlib import contextmanager

import dagster as dg

from replay_assets.core.config import Settings
from replay_assets.core.errors import ErrorCode, ReplayError
from replay_assets.storage.evidence import written_once as service
from replay_assets.storage.home import failpoints
from replay_assets.usecases.context import Pipeline
from replay_assets.usecases.operations import Operations

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
    the backoff is the virtual clock's advance instead (``step_attempt``), so a replayed timeline shows
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
def step_attempt(
    context: dg.AssetExecutionContext, pipeline: Pipeline, step: str, key: str
) -> Iterator[None]:
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
        if not isinstance(error, ReplayError):  # retried by the policy (``step_failure`` decides the rest)
            _wait_virtually(pipeline, attempt)
        raise
    ops.record_step(run_id, step, key=key, attempt=attempt, outcome=service.SUCCEEDED, detail="")


def step_costs(pipeline: Pipeline, context: dg.AssetExecutionContext, step: str) -> dict[str, float]:
    return {f"cost_{k}": v for k, v in Operations(pipeline).run_costs(context.run.run_id, step).items()}


def step_failure(error: ReplayError, pipeline: Pipeline, attempt: int) -> Exception:
    """How a step ends on a ReplayError. A busy warehouse (another connection held the lock past
    the lock timeout, e.g. a long ``reconcile``) is transient: the step is retried within the
    retry budget, after the backoff. Any other code is a contract outcome (blocked, not ready,
    sealed): retrying cannot change it."""
    if error.code in TRANSIENT_CODES:
        _wait_virtually(pipeline, attempt)
        wait = retry_policy(pipeline.settings).calculate_delay(attempt + 1)
        return dg.RetryRequested(max_retries=MAX_RETRIES, seconds_to_wait=wait)
    return dg.Failure(description=str(error), metadata={"code": str(error.code)}, allow_retries=False)
