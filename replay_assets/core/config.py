"""Settings of one deployment, parsed from values (environment mapping and config file) — pure.

Only the composition roots (definitions.py, cli.py) pass in ``os.environ`` and file contents.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from replay_assets.core import strict_json
from replay_assets.core.debezium import SourceMapping, parse_mappings
from replay_assets.core.manifest import Limits, parse_instant
from replay_assets.core.names import BadName, NameKind, check_name
from replay_assets.core.retention import DEFAULT_RETENTION_LOAD_DATES
from replay_assets.core.upcast import Upcaster, parse_upcasters

DEFAULT_START = "2020-01-01"
CONFIG_FILE = "replay-assets.json"
CONFIG_KEYS = frozenset(
    {
        "load_date_start",
        "business_date_start",
        "future_tolerance_days",
        "sources",
        "fail_once",
        "retry_backoff_seconds",
        "slo",
        "sensor_interval_seconds",
        "limits",
        "lock_timeout_seconds",
        "retention_load_dates",
        "upcasters",
        "debezium",
        "warehouse",
        "spark_remote",
        "delta_root",
    }
)


class SettingsError(ValueError):
    """The settings file or an environment value is malformed; names the setting and the rule.
    The command line reports it as a usage error (exit 2) before anything runs."""


@dataclass(frozen=True)
class SloPolicy:
    """SPEC 7 targets; ``expected_time`` (UTC, HH:MM on the load date) is when consumers expect
    the load date's data: availability is measured from it."""

    freshness_minutes: float = 30
    completeness_pct: float = 100
    duration_minutes: float = 10
    availability_minutes: float = 30
    expected_time: str = "00:00"

    def expected_at(self, load_date: str) -> dt.datetime:
        hours, minutes = (int(part) for part in self.expected_time.split(":"))
        return dt.datetime.fromisoformat(load_date).replace(hour=hours, minute=minutes, tzinfo=dt.UTC)


def slo_policy(values: Mapping[str, object]) -> SloPolicy:
    known = {f: values[f] for f in SloPolicy.__dataclass_fields__ if f in values}
    unknown = sorted(set(values) - set(known))
    if unknown:
        raise ValueError(f"unknown slo settings: {', '.join(unknown)}")
    policy = SloPolicy(**known)  # type: ignore[arg-type]
    policy.expected_at("2020-01-01")  # fails early on a malformed HH:MM
    return policy


@dataclass(frozen=True)
class Settings:
    """Where the home is, the partition starts, the future tolerance, the sources and the clock."""

    home: Path
    load_date_start: str = DEFAULT_START
    business_date_start: str = DEFAULT_START
    future_tolerance_days: int = 1
    sources: Mapping[str, str] | None = None  # source -> first load date; None = derive
    fixed_now: dt.datetime | None = None  # REPLAY_ASSETS_NOW; tests and the demo only
    limits: Limits = field(default_factory=Limits)
    lock_timeout_seconds: float = 60.0
    fail_point: str | None = None  # REPLAY_ASSETS_FAIL_POINT: crash tests kill the process there
    fail_once: str | None = None  # REPLAY_ASSETS_FAIL_ONCE: ``step[:point]`` raises one transient fault
    retry_backoff_seconds: float = 5.0  # before retry n: backoff * 2**(n-1), on the (injectable) clock
    slo: SloPolicy = field(default_factory=SloPolicy)
    sensor_interval_seconds: int = 30  # how often the daemon evaluates each sensor
    retention_load_dates: int = DEFAULT_RETENTION_LOAD_DATES  # the replay horizon (core/retention.py)
    upcasters: Mapping[str, Mapping[int, Upcaster]] = field(default_factory=dict)  # core/upcast.py
    debezium: Mapping[str, SourceMapping] = field(default_factory=dict)  # source -> core/debezium.py
    # REPLAY_ASSETS_DAGSTER_YAML: the Dagster instance file (e.g. deploy/postgres/dagster.yaml),
    # installed into the Dagster home; None: whatever that home holds, the project's embedded
    # default (SQLite) when it holds none
    dagster_yaml: Path | None = None
    # REPLAY_ASSETS_WAREHOUSE: the warehouse's engine (SPEC 10 "Scale-out"): "duckdb", the embedded
    # default, or "spark": Delta tables through Spark Connect at REPLAY_ASSETS_SPARK_REMOTE
    # ("local" starts an embedded Sail server), under REPLAY_ASSETS_DELTA_ROOT (any URI the engine
    # reaches; default the home's ``delta`` folder)
    warehouse: str = "duckdb"
    spark_remote: str = "local"
    delta_root: str | None = None

    @property
    def delta_uri(self) -> str:
        """Where the Delta tables are: a URI as given; a path relative to the home, never to the
        working directory of whoever runs a command (every process finds one warehouse)."""
        root = self.delta_root or "delta"
        if "://" in root:
            return root
        return str((self.home / root).resolve())

    @property
    def landing(self) -> Path:
        return self.home / "landing"

    @property
    def dagster_home(self) -> Path:
        return self.home / "dagster"

    def business_date_end(self, now: dt.datetime) -> dt.date:
        return now.date() + dt.timedelta(days=self.future_tolerance_days)


def settings_from(env: Mapping[str, str], home: str | None, config_text: str | None) -> Settings:
    """Build settings: explicit ``home`` > REPLAY_ASSETS_HOME > ``data``; then the config file
    (``$HOME/replay-assets.json``), then environment overrides. Raises :class:`SettingsError`
    for a malformed file (not JSON, a duplicated or unknown key, a bad value) or value."""
    cfg = _config(config_text)
    root = home_path(env, home)
    try:
        return _settings(env, root, cfg)
    except (ValueError, TypeError) as bad:
        raise SettingsError(f"settings ({CONFIG_FILE} or REPLAY_ASSETS_*): {bad}") from None


def _config(text: str | None) -> dict[str, Any]:
    try:
        cfg = strict_json.loads(text) if text else {}
    except strict_json.DuplicateKey as duplicate:
        raise SettingsError(f"{CONFIG_FILE}: {duplicate}") from None
    except (ValueError, RecursionError):
        raise SettingsError(f"{CONFIG_FILE} is not valid JSON") from None
    if not isinstance(cfg, dict):
        raise SettingsError(f"{CONFIG_FILE} is not a JSON object")
    unknown = sorted(set(cfg) - CONFIG_KEYS)
    if unknown:
        raise SettingsError(f"{CONFIG_FILE} has unknown setting {unknown[0]!r}")
    return cfg


def _day(value: Any, name: str) -> str:
    try:
        return check_name(NameKind.LOAD_DATE, value)
    except BadName:
        raise ValueError(f"{name} is not a calendar date YYYY-MM-DD") from None


def _sources(value: Any) -> dict[str, str] | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise ValueError("sources is not an object of source -> first load date")
    for source, start in value.items():
        try:
            check_name(NameKind.SOURCE, source)
        except BadName as bad:
            raise ValueError(f"sources: {bad}") from None
        _day(start, "a source's first load date")
    return dict(value)


def _number(value: Any, name: str, kind: type[int] | type[float]) -> Any:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ValueError(f"{name} is not a number")
    try:
        number = kind(value)
    except ValueError:
        raise ValueError(f"{name} is not a {'whole ' if kind is int else ''}number") from None
    if number < 0:
        raise ValueError(f"{name} is negative")
    return number


def _limits(value: Any) -> Limits:
    """Input limits from the settings file: any subset of :class:`Limits`' fields."""
    if not isinstance(value, dict):
        raise ValueError("limits is not an object")
    unknown = sorted(set(value) - set(Limits.__dataclass_fields__))
    if unknown:
        raise ValueError(f"unknown limit {unknown[0]!r}")
    return Limits(**{name: _number(v, f"limits.{name}", int) for name, v in value.items()})


def _settings(env: Mapping[str, str], root: Path, cfg: dict[str, Any]) -> Settings:
    now_text = env.get("REPLAY_ASSETS_NOW")
    start = env.get("REPLAY_ASSETS_LOAD_DATE_START", cfg.get("load_date_start", DEFAULT_START))
    business = env.get("REPLAY_ASSETS_BUSINESS_DATE_START", cfg.get("business_date_start", DEFAULT_START))
    tolerance = env.get("REPLAY_ASSETS_FUTURE_TOLERANCE_DAYS", cfg.get("future_tolerance_days", 1))
    interval = env.get("REPLAY_ASSETS_SENSOR_INTERVAL_SECONDS", cfg.get("sensor_interval_seconds", 30))
    retention = env.get(
        "REPLAY_ASSETS_RETENTION_LOAD_DATES", cfg.get("retention_load_dates", DEFAULT_RETENTION_LOAD_DATES)
    )
    slo = cfg.get("slo", {})
    if not isinstance(slo, dict):
        raise ValueError("slo is not an object")
    return Settings(
        home=root,
        load_date_start=_day(start, "load_date_start"),
        business_date_start=_day(business, "business_date_start"),
        future_tolerance_days=_number(tolerance, "future_tolerance_days", int),
        sources=_sources(cfg.get("sources")),
        fixed_now=parse_instant(now_text, "REPLAY_ASSETS_NOW") if now_text else None,
        fail_point=env.get("REPLAY_ASSETS_FAIL_POINT") or None,
        fail_once=env.get("REPLAY_ASSETS_FAIL_ONCE") or cfg.get("fail_once") or None,
        retry_backoff_seconds=_number(cfg.get("retry_backoff_seconds", 5.0), "retry_backoff_seconds", float),
        slo=slo_policy(slo),
        sensor_interval_seconds=_number(interval, "sensor_interval_seconds", int),
        limits=_limits(cfg.get("limits", {})),
        lock_timeout_seconds=_number(cfg.get("lock_timeout_seconds", 60.0), "lock_timeout_seconds", float),
        retention_load_dates=_retention(retention),
        upcasters=parse_upcasters(cfg.get("upcasters", {})),
        debezium=parse_mappings(cfg.get("debezium", {})),
        dagster_yaml=Path(named) if (named := env.get("REPLAY_ASSETS_DAGSTER_YAML")) else None,
        warehouse=_engine(env.get("REPLAY_ASSETS_WAREHOUSE", cfg.get("warehouse", "duckdb"))),
        spark_remote=_remote(env.get("REPLAY_ASSETS_SPARK_REMOTE", cfg.get("spark_remote", "local"))),
        delta_root=env.get("REPLAY_ASSETS_DELTA_ROOT", cfg.get("delta_root")) or None,
    )


ENGINES = ("duckdb", "spark")


def _engine(value: Any) -> str:
    if value not in ENGINES:
        raise ValueError(f"warehouse is not one of {', '.join(ENGINES)}")
    return str(value)


def _remote(value: Any) -> str:
    if not isinstance(value, str) or not (value == "local" or value.startswith("sc://")):
        raise ValueError("spark_remote is neither local nor an sc://HOST:PORT address")
    return value


def _retention(value: Any) -> int:
    keep = _number(value, "retention_load_dates", int)
    if keep < 1:
        raise ValueError("retention_load_dates is less than 1 (the horizon keeps the latest load date)")
    return int(keep)


def config_path(env: Mapping[str, str], home: str | None) -> Path:
    return home_path(env, home) / CONFIG_FILE


# What DuckDB 2.0.1 cannot take in a database file's path: it reads a backslash as a path
# separator, and it puts the write-ahead log of a path holding a ``?`` in front of the ``?`` (as if
# the rest were a URL's query), so the warehouse would be written outside the home.
UNADDRESSABLE = {"\\": "a backslash", "?": "a '?'"}


def home_path(env: Mapping[str, str], home: str | None) -> Path:
    """The home: explicit ``home`` > REPLAY_ASSETS_HOME > ``data``. Raises :class:`SettingsError`
    for a path the warehouse cannot live under (every other character works, SPEC 10)."""
    text = home or env.get("REPLAY_ASSETS_HOME") or "data"
    for char, name in UNADDRESSABLE.items():
        if char in text:
            raise SettingsError(
                f"home {text!r} holds {name}: DuckDB reads a backslash in a database path as a "
                "separator and a '?' as the start of a URL query; choose a folder without either"
            )
    return Path(text)
