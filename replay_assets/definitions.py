"""Composition root: the Dagster definitions of a home, from the settings the environment gives
(``entrypoints/environment.py``)."""

from __future__ import annotations

import dagster as dg

from replay_assets.core.config import Settings
from replay_assets.core.lanes import CURRENT, LANE_TAG
from replay_assets.defs.assets import build_assets, build_reverification_checks
from replay_assets.defs.catch_up import CATCH_UP_JOB
from replay_assets.defs.consumers import PUBLISHED_KEY, published_resource, weekly_store_report
from replay_assets.defs.resources import ReplayResource
from replay_assets.defs.sensors import build_sensors
from replay_assets.entrypoints.environment import settings_from_environment


def build_definitions(settings: Settings) -> dg.Definitions:
    assets = build_assets(settings)
    checks = build_reverification_checks()
    # The loads carry their gate checks; the stand-alone re-verification runs on its own job.
    audits = dg.AssetSelection.checks(*checks)
    apply_job = dg.define_asset_job(
        "apply_load_date_job",
        selection=dg.AssetSelection.assets("raw_receipts", "current_orders", "current_customers") - audits,
        description="Land and apply one load date.",
    )
    catch_up_job = dg.define_asset_job(
        CATCH_UP_JOB,
        selection=dg.AssetSelection.assets("current_orders", "current_customers") - audits,
        description="Land and apply a range of ready load dates in order, each on its own (one run).",
    )
    restate_job = dg.define_asset_job(
        "restate_aggregates_job",
        selection=dg.AssetSelection.assets("daily_aggregates") - audits,
        description="Recompute and publish the queued business dates.",
    )
    reverify_job = dg.define_asset_job(
        "reverify_publications_job",
        selection=audits,
        description="Recompute every publication from immutable raw; mismatches become SUSPECT.",
    )
    return dg.Definitions(
        assets=[*assets, weekly_store_report],
        asset_checks=checks,
        jobs=[apply_job, catch_up_job, restate_job, reverify_job],
        schedules=[
            dg.ScheduleDefinition(
                job=reverify_job,
                cron_schedule="30 * * * *",
                default_status=dg.DefaultScheduleStatus.STOPPED,
                tags={LANE_TAG: CURRENT},
                description="Hourly re-verification; turn it on in the UI (Automation) or leave it to "
                "the runbook.",
            )
        ],
        sensors=build_sensors(apply_job.name, restate_job.name, settings.sensor_interval_seconds),
        resources={
            "replay": ReplayResource.for_settings(settings),
            PUBLISHED_KEY: published_resource(settings.home),
        },
        executor=dg.in_process_executor,
    )


@dg.definitions
def defs() -> dg.Definitions:
    return build_definitions(settings_from_environment())
