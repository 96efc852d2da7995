"""Composition root: the only place that reads the environment and picks adapters."""

from __future__ import annotations

import os

import dagster as dg

from replay_assets.core.config import Settings, config_path, settings_from
from replay_assets.defs.assets import build_assets, build_reverification_checks
from replay_assets.defs.resources import ReplayResource
from replay_assets.defs.sensors import build_sensors


def settings_from_environment(home: str | None = None) -> Settings:
    path = config_path(os.environ, home)
    text = path.read_text(encoding="utf-8") if path.exists() else None
    return settings_from(os.environ, home, text)


def build_definitions(settings: Settings) -> dg.Definitions:
    assets = build_assets(settings)
    # The stand-alone audits recompute every publication from history (cost grows with state and
    # days): they run on demand (UI, the implicit asset job), not inside every sensor run. The
    # blocking gate checks stay in the steps that build the data.
    audits = dg.AssetSelection.checks(*(c.key for c in _audit_specs()))
    apply_job = dg.define_asset_job(
        "apply_load_date_job",
        selection=dg.AssetSelection.assets("raw_receipts", "current_orders", "current_customers") - audits,
        description="Land and apply one load date.",
    )
    restate_job = dg.define_asset_job(
        "restate_aggregates_job",
        selection=dg.AssetSelection.assets("daily_aggregates") - audits,
        description="Recompute and publish the queued business dates.",
    )
    return dg.Definitions(
        assets=assets,
        asset_checks=build_reverification_checks(),
        jobs=[apply_job, restate_job],
        sensors=build_sensors(apply_job.name, restate_job.name),
        resources={"replay": ReplayResource.for_settings(settings)},
        executor=dg.in_process_executor,
    )


def _audit_specs() -> list[dg.AssetCheckSpec]:
    return [spec for checks in build_reverification_checks() for spec in checks.check_specs]


@dg.definitions
def defs() -> dg.Definitions:
    return build_definitions(settings_from_environment())
