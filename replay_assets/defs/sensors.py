"""Sensors: observe, ask the pipeline (which asks the core), request runs with content keys."""

import dagster as dg

from replay_assets.core.errors import ErrorCode, ReplayError
from replay_assets.core.events import canonical_json, sha256_text
from replay_assets.core.lanes import CURRENT, LANE_TAG
from replay_assets.defs.resources import ReplayResource
from replay_assets.usecases.decide import decide
from replay_assets.usecases.publish import pending_restatements

CURRENT_LANE = {LANE_TAG: CURRENT}


def build_sensors(apply_job: str, restate_job: str, interval: int = 30) -> list[dg.SensorDefinition]:
    @dg.sensor(
        job_name=apply_job, minimum_interval_seconds=interval, default_status=dg.DefaultSensorStatus.RUNNING
    )
    def source_manifest_sensor(
        context: dg.SensorEvaluationContext, replay: ReplayResource
    ) -> dg.SensorResult | dg.SkipReason:
        """Requests the next load date once every source has a ready manifest for it (never D
        before D-1); explains every load date that waits."""
        try:
            decision = decide(replay.pipeline(), timeout=0)
        except ReplayError as error:
            if error.code is ErrorCode.WAREHOUSE_BUSY:
                return dg.SkipReason(f"{error}; trying again next tick")
            raise
        cursor = sha256_text(canonical_json([[p.load_date, p.status, p.identity] for p in decision.plans]))
        waiting = [
            f"{p.load_date} {p.status}: {p.reason}"
            for p in decision.plans
            if p.status not in ("APPLIED", "READY")
        ] + decision.unreadable
        if decision.next is None:
            return dg.SensorResult(skip_reason="; ".join(waiting) or "no new deliveries", cursor=cursor)
        plan = decision.next
        request = dg.RunRequest(
            partition_key=plan.load_date,
            run_key=f"apply:{plan.load_date}:{plan.attempt_key[:24]}",
            tags=CURRENT_LANE,
        )
        return dg.SensorResult(run_requests=[request], cursor=cursor)

    @dg.sensor(
        job_name=restate_job, minimum_interval_seconds=interval, default_status=dg.DefaultSensorStatus.RUNNING
    )
    def restatement_sensor(
        context: dg.SensorEvaluationContext, replay: ReplayResource
    ) -> dg.SensorResult | dg.SkipReason:
        """Requests exactly the business dates whose groups a load date changed (old and new),
        contiguous dates as one range run."""
        try:
            ranges, state_key = pending_restatements(replay.pipeline(), timeout=0)
        except ReplayError as error:
            if error.code is ErrorCode.WAREHOUSE_BUSY:
                return dg.SkipReason(f"{error}; trying again next tick")
            raise
        if not ranges:
            return dg.SensorResult(skip_reason="no queued restatements", cursor=state_key)
        requests = [
            dg.RunRequest(
                run_key=f"restate:{start}:{end}:{state_key[:24]}",
                tags={
                    **CURRENT_LANE,
                    "dagster/asset_partition_range_start": start,
                    "dagster/asset_partition_range_end": end,
                },
            )
            for start, end in ranges
        ]
        return dg.SensorResult(run_requests=requests, cursor=state_key)

    return [source_manifest_sensor, restatement_sensor]
