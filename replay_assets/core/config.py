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
from replay_assets.core.manifest import Limits
from replay_assets.core.names import BadName, NameKind, check_name
from replay_assets.core.retention import DEFAULT_RETENTION_LOAD_DATES
from replay_assets.core.setting_kinds import (
    Choice,
    Day,
    Instant,
    Kind,
    Number,
    Parsed,
    Section,
    SparkAddress,
    Text,
    Whole,
    from_text,
)
from replay_assets.core.upcast import Upcaster, parse_upcasters

DEFAULT_START = "2020-01-01"
DEFAULT_DUCKDB_MEMORY_PERCENT = 40.0
CONFIG_FILE = "replay-assets.json"
CONFIG_BYTES = 1 << 20  # the settings file is read bounded, like a manifest


class SettingsError(ValueError):
    """The settings file or an environment value is malformed; names the setting and the rule.
    The command line reports it as a usage error (exit 2) before anything runs."""


@dataclass(frozen=True)
class SloPolicy:
    """Service-level targets; ``expected_time`` (UTC, HH:MM on the load date) is when consumers expect
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
    """The ``slo`` object, each target checked for type and range (``slo.<target>``)."""
    policy: SloPolicy = SCHEMA["slo"].kind.check(dict(values), "slo")
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
    retry_backoff_seconds: float = 5.0  # before retry n: (2**n - 1) * backoff (Dagster's exponential)
    slo: SloPolicy = field(default_factory=SloPolicy)
    sensor_interval_seconds: int = 30  # how often the daemon evaluates each sensor
    retention_load_dates: int = DEFAULT_RETENTION_LOAD_DATES  # the replay horizon (core/retention.py)
    upcasters: Mapping[str, Mapping[int, Upcaster]] = field(default_factory=dict)  # core/upcast.py
    debezium: Mapping[str, SourceMapping] = field(default_factory=dict)  # source -> core/debezium.py
    # REPLAY_ASSETS_DAGSTER_YAML: the Dagster instance file (e.g. deploy/postgres/dagster.yaml),
    # installed into the Dagster home; None: whatever that home holds, the project's embedded
    # default (SQLite) when it holds none
    dagster_yaml: Path | None = None
    # REPLAY_ASSETS_WAREHOUSE: the warehouse's engine: "duckdb", the embedded
    # default, or "spark": Delta tables through Spark Connect at REPLAY_ASSETS_SPARK_REMOTE
    # ("local" starts an embedded Sail server), under REPLAY_ASSETS_DELTA_ROOT (any URI the engine
    # reaches; default the home's ``delta`` folder)
    warehouse: str = "duckdb"
    spark_remote: str = "local"
    delta_root: str | None = None
    # REPLAY_ASSETS_SPARK_LANDING_URI: where the engine's workers read the landing area (a URI,
    # e.g. s3://bucket/landing, holding what the home's ``landing`` folder holds, e.g. a bucket
    # this machine mounts there); None: the landing folder's own path, which the engine must see
    spark_landing_uri: str | None = None
    # REPLAY_ASSETS_SPARK_CONNECT_TIMEOUT_SECONDS: how long a Spark Connect server may take to
    # answer before the command fails with REPLAY_WAREHOUSE_UNREACHABLE
    spark_connect_timeout_seconds: float = 30.0
    # REPLAY_ASSETS_DUCKDB_MEMORY_PERCENT: DuckDB's memory limit per connection to the warehouse,
    # as a share of the machine's memory (its cgroup's limit when lower); beyond it DuckDB spills
    duckdb_memory_percent: float = DEFAULT_DUCKDB_MEMORY_PERCENT

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
    """Build settings: explicit ``home`` > REPLAY_ASSETS_HOME > ``data``; then each value from
    its environment variable, else the config file (``$HOME/replay-assets.json``), else its
    default, checked against :data:`SCHEMA`. Raises :class:`SettingsError` for a malformed file
    (not JSON, a duplicated or unknown key) or a value of the wrong type or range, naming it."""
    cfg = _config(config_text)
    root = home_path(env, home)
    try:
        return Settings(home=root, **_values(env, cfg))
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
    reserved = [key for key in unknown if key in SCHEMA and SCHEMA[key].env]
    if reserved:  # the clock and the rehearsal faults: never a production file's to set
        raise SettingsError(
            f"{CONFIG_FILE} may not set {reserved[0]!r}: only {SCHEMA[reserved[0]].env} sets it"
        )
    if unknown:
        raise SettingsError(f"{CONFIG_FILE} has unknown setting {unknown[0][:80]!r}")
    return cfg


def settings_of(home: Path, values: Mapping[str, Any]) -> Settings:
    """Settings from values in their file form (a Dagster resource's fields, which an operator
    may edit in the launchpad), each checked against :data:`SCHEMA` as the file's are; None
    (or empty text for an optional value) is the default. Raises :class:`SettingsError`."""
    checked: dict[str, Any] = {}
    for key, setting in SCHEMA.items():
        value = values.get(key)
        unset = value is None or (value == "" and setting.optional)
        try:
            checked[key] = setting.default if unset else setting.kind.check(value, key)
        except (ValueError, TypeError) as bad:
            raise SettingsError(f"settings (the Dagster resource's fields): {bad}") from None
    return Settings(home=home, **checked)


def _values(env: Mapping[str, str], cfg: Mapping[str, Any]) -> dict[str, Any]:
    """Each setting's value: its environment variable (an empty one counts as unset), else the
    file's, else the default; all but the default are checked, named as the operator wrote them."""
    values: dict[str, Any] = {}
    for key, setting in SCHEMA.items():
        text = env.get(setting.env) if setting.env else None
        if text and setting.env:
            values[key] = setting.kind.check(from_text(setting.kind, text), setting.env)
        elif setting.in_file and key in cfg and (cfg[key] is not None or not setting.optional):
            values[key] = setting.kind.check(cfg[key], key)
        else:
            values[key] = setting.default
    return values


def _sources(value: Any) -> dict[str, str]:
    if not isinstance(value, dict):
        raise ValueError("sources is not an object of source -> first load date")
    for source, start in value.items():
        try:
            check_name(NameKind.SOURCE, source)
        except BadName as bad:
            raise ValueError(f"sources: {bad}") from None
        Day().check(start, f"sources.{source}")
    return dict(value)


@dataclass(frozen=True)
class Setting:
    """One settings value: its kind (type and range), default, environment variable, and
    whether ``replay-assets.json`` may set it. Optional values take ``null`` or ``""`` as unset."""

    kind: Kind
    default: Any = None
    env: str | None = None
    in_file: bool = True
    optional: bool = False


def _env(name: str) -> str:
    return f"REPLAY_ASSETS_{name.upper()}"


ENGINES = ("duckdb", "spark")
_STEP = r"[A-Za-z0-9_.-]{1,100}"
_MINUTES = Number(0, 525_600)  # service-level targets: up to a year
# Every settings value, keyed by its Settings field (the file's key): the one typed schema.
SCHEMA: Mapping[str, Setting] = {
    "load_date_start": Setting(Day(), DEFAULT_START, _env("load_date_start")),
    "business_date_start": Setting(Day(), DEFAULT_START, _env("business_date_start")),
    "future_tolerance_days": Setting(Whole(0, 366), 1, _env("future_tolerance_days")),
    "sources": Setting(Parsed(_sources), optional=True),
    "fixed_now": Setting(Instant(), env=_env("now"), in_file=False, optional=True),
    "limits": Setting(
        Section(
            {
                "manifest_bytes": Whole(1, 1 << 30),
                "file_bytes": Whole(1, 1 << 50),
                "events_per_file": Whole(1, 1 << 40),
                "files_per_manifest": Whole(1, 1_000_000),
                "line_bytes": Whole(1, 1 << 30),
            },
            Limits,
        ),
        Limits(),
    ),
    "lock_timeout_seconds": Setting(Number(0, 86_400), 60.0),
    "fail_point": Setting(
        Text(rf"(stop:)?{_STEP}(:{_STEP})?(#[1-9][0-9]{{0,8}})?", "a fail point [stop:]point[#n]"),
        env=_env("fail_point"),
        in_file=False,
        optional=True,
    ),
    "fail_once": Setting(
        Text(rf"{_STEP}(:{_STEP})?", "a step[:point]"), env=_env("fail_once"), in_file=False, optional=True
    ),
    "retry_backoff_seconds": Setting(Number(0, 3_600), 5.0),
    "slo": Setting(
        Section(
            {
                "freshness_minutes": _MINUTES,
                "completeness_pct": Number(0, 100),
                "duration_minutes": _MINUTES,
                "availability_minutes": _MINUTES,
                "expected_time": Text(
                    r"([01][0-9]|2[0-3]):[0-5][0-9]", "a time of day HH:MM (UTC)", optional=False
                ),
            },
            SloPolicy,
        ),
        SloPolicy(),
    ),
    "sensor_interval_seconds": Setting(Whole(1, 86_400), 30, _env("sensor_interval_seconds")),
    "retention_load_dates": Setting(
        Whole(1, 36_500), DEFAULT_RETENTION_LOAD_DATES, _env("retention_load_dates")
    ),
    "upcasters": Setting(Parsed(parse_upcasters), {}),
    "debezium": Setting(Parsed(parse_mappings), {}),
    "dagster_yaml": Setting(Parsed(Path), env=_env("dagster_yaml"), in_file=False, optional=True),
    "warehouse": Setting(Choice(ENGINES), "duckdb", _env("warehouse")),
    "spark_remote": Setting(SparkAddress(), "local", _env("spark_remote")),
    "delta_root": Setting(
        Text(r"[^\x00-\x1f]{1,4096}", "a path or URI"), env=_env("delta_root"), optional=True
    ),
    "spark_landing_uri": Setting(
        Text(r"[A-Za-z][A-Za-z0-9+.-]*://[^\x00-\x1f]{1,4096}", "a URI (scheme://...)"),
        env=_env("spark_landing_uri"),
        optional=True,
    ),
    "spark_connect_timeout_seconds": Setting(Number(0.1, 600), 30.0, _env("spark_connect_timeout_seconds")),
    # at least 1 %; at most 90 %, so the Python side, Dagster and the OS keep room beside DuckDB
    "duckdb_memory_percent": Setting(
        Number(1, 90), DEFAULT_DUCKDB_MEMORY_PERCENT, _env("duckdb_memory_percent")
    ),
}
CONFIG_KEYS = frozenset(key for key, setting in SCHEMA.items() if setting.in_file)


def config_path(env: Mapping[str, str], home: str | None) -> Path:
    return home_path(env, home) / CONFIG_FILE


# What DuckDB 2.0.1 cannot take in a database file's path: it reads a backslash as a path
# separator, and it puts the write-ahead log of a path holding a ``?`` in front of the ``?`` (as if
# the rest were a URL's query), so the warehouse would be written outside the home.
UNADDRESSABLE = {"\\": "a backslash", "?": "a '?'"}


def home_path(env: Mapping[str, str], home: str | None) -> Path:
    """The home: explicit ``home`` > REPLAY_ASSETS_HOME > ``data``. Raises :class:`SettingsError`
    for a path the warehouse cannot live under (every other character works)."""
    text = home or env.get("REPLAY_ASSETS_HOME") or "data"
    for char, name in UNADDRESSABLE.items():
        if char in text:
            raise SettingsError(
                f"home {text!r} holds {name}: DuckDB reads a backslash in a database path as a "
                "separator and a '?' as the start of a URL query; choose a folder without either"
            )
    return Path(text)
