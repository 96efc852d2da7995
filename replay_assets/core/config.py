"""Settings of one deployment, parsed from values (environment mapping and config file) — pure.

Only the composition roots (definitions.py, cli.py) pass in ``os.environ`` and file contents.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from replay_assets.core.manifest import Limits, parse_instant

DEFAULT_START = "2020-01-01"
CONFIG_FILE = "replay-assets.json"


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
    (``$HOME/replay-assets.json``), then environment overrides."""
    root = Path(home or env.get("REPLAY_ASSETS_HOME") or "data")
    cfg = json.loads(config_text) if config_text else {}
    now_text = env.get("REPLAY_ASSETS_NOW")
    return Settings(
        home=root,
        load_date_start=env.get("REPLAY_ASSETS_LOAD_DATE_START", cfg.get("load_date_start", DEFAULT_START)),
        business_date_start=env.get(
            "REPLAY_ASSETS_BUSINESS_DATE_START", cfg.get("business_date_start", DEFAULT_START)
        ),
        future_tolerance_days=int(
            env.get("REPLAY_ASSETS_FUTURE_TOLERANCE_DAYS", cfg.get("future_tolerance_days", 1))
        ),
        sources=cfg.get("sources"),
        fixed_now=parse_instant(now_text, "REPLAY_ASSETS_NOW") if now_text else None,
        fail_point=env.get("REPLAY_ASSETS_FAIL_POINT") or None,
        fail_once=env.get("REPLAY_ASSETS_FAIL_ONCE") or cfg.get("fail_once") or None,
        retry_backoff_seconds=float(cfg.get("retry_backoff_seconds", 5.0)),
        slo=slo_policy(cfg.get("slo", {})),
        sensor_interval_seconds=int(
            env.get("REPLAY_ASSETS_SENSOR_INTERVAL_SECONDS", cfg.get("sensor_interval_seconds", 30))
        ),
    )


def config_path(env: Mapping[str, str], home: str | None) -> Path:
    return Path(home or env.get("REPLAY_ASSETS_HOME") or "data") / CONFIG_FILE
