"""The one resource assets and sensors use: the pipeline of a home (storage does the rest)."""

# ruff: noqa: RUF012  (pydantic, under dg.Config, copies a mutable default for each instance, and
# Dagster takes a config default from a plain default only, never from a default_factory)

import dataclasses
import datetime as dt
from pathlib import Path
from typing import Any

import dagster as dg

from replay_assets.core.config import DEFAULT_DUCKDB_MEMORY_PERCENT, SCHEMA, Settings, SloPolicy, settings_of
from replay_assets.core.manifest import Limits
from replay_assets.core.retention import DEFAULT_RETENTION_LOAD_DATES
from replay_assets.usecases.context import Pipeline

_LIMITS, _SLO = Limits(), SloPolicy()


class LimitsConfig(dg.Config):
    """Input limits (``limits`` in ``replay-assets.json``): a delivery over any is not ready."""

    manifest_bytes: int = _LIMITS.manifest_bytes
    file_bytes: int = _LIMITS.file_bytes
    events_per_file: int = _LIMITS.events_per_file
    files_per_manifest: int = _LIMITS.files_per_manifest
    line_bytes: int = _LIMITS.line_bytes


class SloConfig(dg.Config):
    """Service-level targets (``slo`` in ``replay-assets.json``)."""

    freshness_minutes: float = _SLO.freshness_minutes
    completeness_pct: float = _SLO.completeness_pct
    duration_minutes: float = _SLO.duration_minutes
    availability_minutes: float = _SLO.availability_minutes
    expected_time: str = _SLO.expected_time


class UpcasterConfig(dg.Config):
    """How one older ``schema_version`` of a source maps onto the contract (``core/upcast.py``)."""

    drop: list[str] = []
    rename: dict[str, str] = {}
    widen: dict[str, str] = {}
    add: dict[str, Any] = {}


class DebeziumTableConfig(dg.Config):
    """One source table's mapping onto an entity; a column is its name or ``{column, scale,
    time_zone, type}`` (``core/source_tables.py``)."""

    entity: str
    columns: dict[str, Any] = {}
    defaults: dict[str, Any] = {}


class DebeziumConfig(dg.Config):
    """A Debezium source's tables by full name and the offset subtracted from every position."""

    tables: dict[str, DebeziumTableConfig]
    position_offset: int = 0


@dataclasses.dataclass(frozen=True)
class Rehearsal:
    """The clock and the faults of a rehearsal (tests and the demo set them through
    ``REPLAY_ASSETS_NOW``, ``_FAIL_POINT`` and ``_FAIL_ONCE``, or in the settings they build). They
    travel beside the resource's fields, never as fields: nothing an operator edits in the
    launchpad can stop the clock or inject a fault."""

    fixed_now: dt.datetime | None = None
    fail_point: str | None = None
    fail_once: str | None = None

    @classmethod
    def of(cls, s: Settings) -> "Rehearsal":
        return cls(fixed_now=s.fixed_now, fail_point=s.fail_point, fail_once=s.fail_once)


KNOBS = frozenset(field.name for field in dataclasses.fields(Rehearsal))


class ReplayResource(dg.ConfigurableResource):  # type: ignore[type-arg]
    """Opens the home's warehouse through the storage layer, which owns locking and always
    closes its connection (dagster-duckdb's resource leaks it when the body raises).

    Carries every production field of :class:`Settings`, typed (``settings()`` rebuilds an equal
    value): a field left out would silently fall back to its default inside every step and
    sensor. The rehearsal's clock and faults are a resource dependency, not configuration."""

    home: str
    load_date_start: str
    business_date_start: str
    future_tolerance_days: int = 1
    sources: dict[str, str] | None = None
    limits: LimitsConfig = LimitsConfig()
    lock_timeout_seconds: float = 60.0
    retry_backoff_seconds: float = 5.0
    slo: SloConfig = SloConfig()
    sensor_interval_seconds: int = 30
    retention_load_dates: int = DEFAULT_RETENTION_LOAD_DATES
    upcasters: dict[str, dict[str, UpcasterConfig]] = {}
    debezium: dict[str, DebeziumConfig] = {}
    dagster_yaml: str | None = None
    warehouse: str = "duckdb"
    spark_remote: str = "local"
    delta_root: str | None = None
    spark_landing_uri: str | None = None
    spark_connect_timeout_seconds: float = 30.0
    duckdb_memory_percent: float = DEFAULT_DUCKDB_MEMORY_PERCENT
    rehearsal: dg.ResourceDependency[Rehearsal]

    @classmethod
    def for_settings(cls, s: Settings) -> "ReplayResource":
        upcasters = {src: {str(v): u.declaration() for v, u in by.items()} for src, by in s.upcasters.items()}
        return cls(
            home=str(s.home),
            load_date_start=s.load_date_start,
            business_date_start=s.business_date_start,
            future_tolerance_days=s.future_tolerance_days,
            sources=dict(s.sources) if s.sources is not None else None,
            limits=LimitsConfig(**dataclasses.asdict(s.limits)),
            lock_timeout_seconds=s.lock_timeout_seconds,
            retry_backoff_seconds=s.retry_backoff_seconds,
            slo=SloConfig(**dataclasses.asdict(s.slo)),
            sensor_interval_seconds=s.sensor_interval_seconds,
            retention_load_dates=s.retention_load_dates,
            upcasters={src: {v: UpcasterConfig(**u) for v, u in by.items()} for src, by in upcasters.items()},
            debezium={src: DebeziumConfig(**m.declaration()) for src, m in s.debezium.items()},
            dagster_yaml=str(s.dagster_yaml) if s.dagster_yaml is not None else None,
            warehouse=s.warehouse,
            spark_remote=s.spark_remote,
            delta_root=s.delta_root,
            spark_landing_uri=s.spark_landing_uri,
            spark_connect_timeout_seconds=s.spark_connect_timeout_seconds,
            duckdb_memory_percent=s.duckdb_memory_percent,
            rehearsal=Rehearsal.of(s),
        )

    def settings(self) -> Settings:
        """The resource's fields as settings, every value checked by the one settings schema
        (in its file form: nested configuration as plain objects), then the rehearsal's."""
        values = {key: _plain(getattr(self, key)) for key in SCHEMA if key not in KNOBS}
        checked = settings_of(Path(self.home), values)
        return dataclasses.replace(checked, **dataclasses.asdict(self.rehearsal))

    def pipeline(self) -> Pipeline:
        return Pipeline(self.settings())


def _plain(value: Any) -> Any:
    """A configuration value as the settings file writes it: Config objects as plain objects."""
    if isinstance(value, dg.Config):
        return value.model_dump()
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_plain(item) for item in value]
    return value
