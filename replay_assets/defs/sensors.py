"""Sensors: observe through the reader, ask the pipeline (which asks the core), request runs with
content keys, and say why everything else waits (skip message and the tick's log)."""

import datetime as dt

import dagster as dg

from replay_assets.core.errors import ErrorCode, ReplayError
from replay_assets.core.events import canonical_json, sha256_text
from replay_assets.core.lanes import CURRENT, LANE_TAG
from replay_assets.core.plan import DatePlan
from replay_assets.core.status import DateStatus
from replay_assets.defs.assets import POOL
from replay_assets.defs.resources import ReplayResource
from replay_assets.usecases.decide import Decision
from replay_assets.usecases.publish import pending_restatements
from replay_assets.usecases.sensor_cursors import sense

CURRENT_LANE = {LANE_TAG: CURRENT}
QUIET = frozenset({DateStatus.APPLIED, DateStatus.READY, DateStatus.RESTATE})


def build_sensors(apply_job: str, restate_job: str, interval: int = 30) -> list[dg.SensorDefinition]:
    @dg.sensor(
        job_name=apply_job, minimum_interval_seconds=interval, default_status=dg.DefaultSensorStatus.RUNNING
    )
    def source_manifest_sensor(
        context: dg.SensorEvaluationContext, replay: ReplayResource
    ) -> dg.SensorResult:
        """Requests every load date whose sources all have a ready manifest, in date order (the
        runs are dequeued one at a time in that order: pool granularity ``run``), and says why
        each other load date waits or is refused. Reads only new or changed manifests."""
        try:
            decision, cursor = sense(replay.pipeline(), context.cursor)
        except ReplayError as error:
            if error.code is not ErrorCode.WAREHOUSE_BUSY:  # even the published copy is busy
                raise
            return dg.SensorResult(skip_reason=f"{error}; trying again next tick", cursor=context.cursor)
        waiting = waiting_reasons(decision)
        for line in [*waiting, f"{decision.parsed} manifest(s) read; {len(decision.ready)} date(s) ready"]:
            context.log.info(line)
        requests = [
            dg.RunRequest(partition_key=p.load_date, run_key=apply_run_key(decision, p), tags=CURRENT_LANE)
            for p in decision.ready
        ]
        if not requests:
            return dg.SensorResult(skip_reason="; ".join(waiting) or "no new deliveries", cursor=cursor)
        require_writer_pool(context)
        return dg.SensorResult(run_requests=requests, cursor=cursor)

    @dg.sensor(
        job_name=restate_job, minimum_interval_seconds=interval, default_status=dg.DefaultSensorStatus.RUNNING
    )
    def restatement_sensor(context: dg.SensorEvaluationContext, replay: ReplayResource) -> dg.SensorResult:
        """Requests exactly the business dates whose groups a certified load date changed (old
        and new), contiguous dates as one range run; says which ranges are new since the last tick."""
        try:
            ranges, state_key = pending_restatements(replay.pipeline(), timeout=0)
        except ReplayError as error:
            if error.code is not ErrorCode.WAREHOUSE_BUSY:  # even the published copy is busy
                raise
            return dg.SensorResult(skip_reason=f"{error}; trying again next tick", cursor=context.cursor)
        keys = {f"{start}..{end}": restate_run_key(start, end, state_key) for start, end in ranges}
        before = set(context.cursor.split(",")) if context.cursor else set()
        for label, key in keys.items():
            context.log.info(f"business dates {label}: {'requested before' if key in before else 'new'}")
        if not ranges:
            reason = "no queued restatements of certified load dates"
            context.log.info(reason)
            return dg.SensorResult(skip_reason=reason, cursor="")
        requests = [restate_request(start, end, keys[f"{start}..{end}"]) for start, end in ranges]
        return dg.SensorResult(run_requests=requests, cursor=",".join(sorted(keys.values())))

    return [source_manifest_sensor, restatement_sensor]


def require_writer_pool(context: dg.SensorEvaluationContext) -> None:
    """The writer pool's limit recorded before its first runs are queued: the queue reads the
    pools it knows before it records a new one, so on a fresh instance its first pass would
    start two writer runs at once, out of their load dates' order. A context built without an
    instance (a unit test's) has no queue to prepare."""
    try:
        storage = context.instance.event_log_storage
    except dg.DagsterInvariantViolationError:
        return
    if storage.supports_global_concurrency_limits and POOL not in storage.get_concurrency_keys():
        storage.initialize_concurrency_limit_to_default(POOL)


def apply_run_key(decision: Decision, plan: DatePlan) -> str:
    """The same input gives the same key (the daemon never requests a key twice); a date whose
    run failed and is ready again (its predecessor applied since) gets a new one."""
    failed = decision.failed_attempts.get(plan.load_date, ())
    token = sha256_text(canonical_json([plan.attempt_key, list(failed)])) if failed else plan.attempt_key
    return f"apply:{plan.load_date}:{token[:24]}"


def restate_request(start: str, end: str, run_key: str) -> dg.RunRequest:
    """One range run of the business dates ``start..end``."""
    range_tags = {"dagster/asset_partition_range_start": start, "dagster/asset_partition_range_end": end}
    return dg.RunRequest(run_key=run_key, tags={**CURRENT_LANE, **range_tags})


def restate_run_key(start: str, end: str, state_key: str) -> str:
    return f"restate:{start}:{end}:{state_key[:24]}"


def waiting_reasons(decision: Decision) -> list[str]:
    """One line per waiting or refused load date, consecutive dates with the same status and
    reason as one range, then every manifest that cannot be read."""
    lines: list[tuple[str, str, str]] = []  # first date, last date, "STATUS: reason"
    for plan in decision.plans:
        if plan.status in QUIET and not plan.problem:
            continue
        text = f"{plan.status}: {plan.reason}"
        if lines and lines[-1][2] == text and plan.load_date == _next_day(lines[-1][1]):
            lines[-1] = (lines[-1][0], plan.load_date, text)
        else:
            lines.append((plan.load_date, plan.load_date, text))
    ranged = [f"{a if a == b else f'{a}..{b}'} {text}" for a, b, text in lines]
    return ranged + [f"unreadable manifest {u}" for u in decision.unreadable]


def _next_day(day: str) -> str:
    return (dt.date.fromisoformat(day) + dt.timedelta(days=1)).isoformat()
