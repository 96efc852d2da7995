"""The one resource assets and sensors use: the pipeline of a home (storage does the rest)."""

import dataclasses
import json
from pathlib import Path

import dagster as dg

from replay_assets.core import strict_json
from replay_assets.core.config import SCHEMA, Settings, settings_of
from replay_assets.core.retention import DEFAULT_RETENTION_LOAD_DATES
from replay_assets.usecases.context import Pipeline


class ReplayResource(dg.ConfigurableResource):  # type: ignore[type-arg]
    """Opens the home's warehouse through the storage layer, which owns locking and always
    closes its connection (dagster-duckdb's resource leaks it when the body raises).

    Carries every field of :class:`Settings` (``settings()`` rebuilds an equal value): a field
    left out would silently fall back to its default inside every step and sensor."""

    home: str
    load_date_start: str
    business_date_start: str
    future_tolerance_days: int = 1
    sources_json: str | None = None
    fixed_now: str | None = None
    limits_json: str = "{}"
    lock_timeout_seconds: float = 60.0
    fail_point: str | None = None
    fail_once: str | None = None
    retry_backoff_seconds: float = 5.0
    slo_json: str = "{}"
    sensor_interval_seconds: int = 30
    retention_load_dates: int = DEFAULT_RETENTION_LOAD_DATES
    upcasters_json: str = "{}"
    debezium_json: str = "{}"
    dagster_yaml: str | None = None
    warehouse: str = "duckdb"
    spark_remote: str = "local"
    delta_root: str | None = None
    spark_connect_timeout_seconds: float = 30.0

    @classmethod
    def for_settings(cls, s: Settings) -> "ReplayResource":
        return cls(
            home=str(s.home),
            load_date_start=s.load_date_start,
            business_date_start=s.business_date_start,
            future_tolerance_days=s.future_tolerance_days,
            sources_json=json.dumps(dict(s.sources)) if s.sources is not None else None,
            fixed_now=s.fixed_now.isoformat() if s.fixed_now else None,
            limits_json=json.dumps(dataclasses.asdict(s.limits)),
            lock_timeout_seconds=s.lock_timeout_seconds,
            fail_point=s.fail_point,
            fail_once=s.fail_once,
            retry_backoff_seconds=s.retry_backoff_seconds,
            slo_json=json.dumps(dataclasses.asdict(s.slo)),
            sensor_interval_seconds=s.sensor_interval_seconds,
            retention_load_dates=s.retention_load_dates,
            upcasters_json=json.dumps(
                {src: {str(v): u.declaration() for v, u in by.items()} for src, by in s.upcasters.items()}
            ),
            debezium_json=json.dumps({src: m.declaration() for src, m in s.debezium.items()}),
            dagster_yaml=str(s.dagster_yaml) if s.dagster_yaml is not None else None,
            warehouse=s.warehouse,
            spark_remote=s.spark_remote,
            delta_root=s.delta_root,
            spark_connect_timeout_seconds=s.spark_connect_timeout_seconds,
        )

    def settings(self) -> Settings:
        """The resource's fields as settings, every value checked by the one settings schema."""
        parsed = {"sources": self.sources_json or None, "limits": self.limits_json, "slo": self.slo_json}
        parsed |= {"upcasters": self.upcasters_json, "debezium": self.debezium_json}
        values = {key: strict_json.loads(text) if text else None for key, text in parsed.items()}
        fields = {key: getattr(self, key) for key in SCHEMA if key not in values and hasattr(self, key)}
        return settings_of(Path(self.home), {**fields, **values})

    def pipeline(self) -> Pipeline:
        return Pipeline(self.settings())
