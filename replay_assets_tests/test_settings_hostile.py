"""Settings as hostile input (SPEC 10 "Hostile input", v4): every settings value is type- and
range-checked when it is read (exit 2 naming the key), the settings file is read like a delivery
(a regular file only, bounded, never a blocking open), and the Spark Connect address is checked
when read and reached within a deadline.

The commands run in-process (``main``) on a temporary home, except where a hang is the defect
guarded against: those run ``replay-assets`` as a child process with a timeout.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from replay_assets.core.config import CONFIG_FILE, SCHEMA, Settings, SettingsError, settings_from
from replay_assets.core.retention import prunable
from replay_assets.defs.partitions import business_date_partitions, load_date_partitions
from replay_assets.defs.resources import ReplayResource
from replay_assets.entrypoints.cli import main
from replay_assets.entrypoints.environment import settings_from_environment
from replay_assets.usecases.context import Pipeline
from replay_assets_tests.helpers import drive, settings_for

NOW = "2026-01-10T12:00:00Z"
D1 = "2026-01-09"
PACKAGE = Path(__file__).resolve().parents[1] / "replay_assets"
CASES = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@pytest.fixture(scope="module")
def applied_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A home with one applied and published load date: ``status`` then reads real evidence
    (its service levels use the ``slo`` settings). ``status`` never writes, so tests share it."""
    home = tmp_path_factory.mktemp("settings") / "home"
    home.mkdir()
    line = {
        "event_id": "e1",
        "source": "erp",
        "source_seq": 1,
        "order_id": "o1",
        "op": "upsert",
        "version": 1,
        "event_ts": "2026-01-08T10:00:00Z",
        "business_date": "2026-01-08",
        "store_id": "s1",
        "customer_id": "c1",
        "status": "paid",
        "amount_cents": 500,
        "currency": "EUR",
        "schema_version": 1,
    }
    events = home.parent / "events.jsonl"
    events.write_text(json.dumps(line) + "\n", encoding="utf-8")
    env = {"REPLAY_ASSETS_NOW": NOW}
    with _environment(env):
        assert main(["land", str(events), "--source", "erp", "--load-date", D1, "--home", str(home)]) == 0
    done = drive(Pipeline(settings_for(home, NOW)))
    assert done[0] == f"apply {D1}: APPLIED"
    return home


class _environment:
    """``os.environ`` with exactly these ``REPLAY_ASSETS_*`` values for the block (the others
    removed), restored after: hypothesis examples cannot use a function-scoped monkeypatch."""

    def __init__(self, values: dict[str, str]) -> None:
        self.values = values
        self.saved: dict[str, str] = {}

    def __enter__(self) -> None:
        self.saved = {k: v for k, v in os.environ.items() if k.startswith(("REPLAY_ASSETS_", "DAGSTER_HOME"))}
        for name in self.saved:
            del os.environ[name]
        os.environ.update(self.values)

    def __exit__(self, *exc: object) -> None:
        for name in [k for k in os.environ if k.startswith(("REPLAY_ASSETS_", "DAGSTER_HOME"))]:
            del os.environ[name]
        os.environ.update(self.saved)


def status(home: Path, env: dict[str, str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    capsys.readouterr()
    with _environment({"REPLAY_ASSETS_NOW": NOW, **env}):
        code = main(["status", "--home", str(home)])
    return code, capsys.readouterr().err


def files_of(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


# --------------------------------------------------------------------------- reported values


@pytest.mark.parametrize(
    ("config", "env", "key"),
    [
        ({"slo": {"freshness_minutes": "abc"}}, {}, "slo.freshness_minutes"),
        ({"slo": {"expected_time": 5}}, {}, "slo.expected_time"),
        ({"slo": {"completeness_pct": 101}}, {}, "slo.completeness_pct"),
        ({"future_tolerance_days": 1e9}, {}, "future_tolerance_days"),
        ({"retention_load_dates": 1.9}, {}, "retention_load_dates"),
        ({"lock_timeout_seconds": "nan"}, {}, "lock_timeout_seconds"),
        ({"retry_backoff_seconds": -1}, {}, "retry_backoff_seconds"),
        ({"sensor_interval_seconds": 0}, {}, "sensor_interval_seconds"),
        ({"limits": {"line_bytes": 0}}, {}, "limits.line_bytes"),
        ({"fail_once": 5}, {}, "fail_once"),
        ({"delta_root": ["x"]}, {}, "delta_root"),
        ({"load_date_start": "0001-01-01"}, {}, "load_date_start"),
        ({}, {"REPLAY_ASSETS_FUTURE_TOLERANCE_DAYS": "1e9"}, "REPLAY_ASSETS_FUTURE_TOLERANCE_DAYS"),
        ({}, {"REPLAY_ASSETS_RETENTION_LOAD_DATES": "Infinity"}, "REPLAY_ASSETS_RETENTION_LOAD_DATES"),
        ({}, {"REPLAY_ASSETS_SENSOR_INTERVAL_SECONDS": "nan"}, "REPLAY_ASSETS_SENSOR_INTERVAL_SECONDS"),
        ({}, {"REPLAY_ASSETS_NOW": "9999-12-31T23:00:00+00:00"}, "REPLAY_ASSETS_NOW"),
        ({}, {"REPLAY_ASSETS_FAIL_POINT": "apply.before_commit#x"}, "REPLAY_ASSETS_FAIL_POINT"),
    ],
)
def test_a_value_out_of_type_or_range_is_a_usage_error_naming_the_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], config: dict[str, Any], env: dict[str, str], key: str
) -> None:
    """SPEC 10 (v4): every settings value is type and range checked when read: exit 2 naming
    the key, before anything runs (the home is left as it was)."""
    (tmp_path / CONFIG_FILE).write_text(json.dumps(config), encoding="utf-8")
    before = files_of(tmp_path)
    code, err = status(tmp_path, env, capsys)
    assert code == 2
    assert "REPLAY_USAGE" in err and key in err
    assert files_of(tmp_path) == before


def test_infinity_in_the_settings_file_is_refused_naming_the_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """SPEC 10 (v4): ``Infinity`` (which Python's JSON reader accepts) is no count: exit 2."""
    (tmp_path / CONFIG_FILE).write_text('{"retention_load_dates": Infinity}', encoding="utf-8")
    code, err = status(tmp_path, {}, capsys)
    assert (code, "retention_load_dates" in err) == (2, True)


def test_a_freshness_target_that_is_no_number_never_reaches_status(
    applied_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """SPEC 10 (v4): the value is refused when read, not when ``status`` computes service levels
    over an applied date."""
    (applied_home / CONFIG_FILE).write_text(json.dumps({"slo": {"freshness_minutes": "abc"}}))
    try:
        code, err = status(applied_home, {}, capsys)
    finally:
        (applied_home / CONFIG_FILE).unlink()
    assert (code, "slo.freshness_minutes" in err) == (2, True)
    assert status(applied_home, {}, capsys)[0] == 0  # the same home reads fine without it


# --------------------------------------------------------------------------- every key, hostile values

HOSTILE = st.one_of(
    st.text(max_size=12),
    st.sampled_from(
        ["", "abc", "nan", "NaN", "Infinity", "-Infinity", "1e9", "1e999", "-1", "0", "1.9", "35"]
    ),
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(min_value=-(10**30), max_value=10**30),
    st.sampled_from([0, 1, -1, 2**63, 10**400, 1.0, 0.5]),
    st.booleans(),
    st.none(),
    st.lists(st.integers(), max_size=3),
    st.dictionaries(
        st.text(max_size=5), st.one_of(st.none(), st.integers(), st.text(max_size=5)), max_size=3
    ),
    st.recursive(
        st.none() | st.integers(), lambda inner: st.dictionaries(st.text(max_size=3), inner), max_leaves=6
    ),
)
FILE_KEYS = sorted(key for key, setting in SCHEMA.items() if setting.in_file)
ENV_NAMES = sorted(setting.env for setting in SCHEMA.values() if setting.env)
# where hostile values reach a nested field: every field of the slo and limits objects
NESTED = [("slo", field) for field in ("freshness_minutes", "completeness_pct", "expected_time")] + [
    ("limits", field) for field in ("line_bytes", "manifest_bytes", "files_per_manifest")
]


def _text(value: object) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def exercise(s: Settings) -> None:
    """Use each value the way the project does: accepted values must work there too."""
    now = s.fixed_now or dt.datetime.now(dt.UTC)
    assert s.business_date_end(now) >= now.date()
    s.slo.expected_at(D1)
    assert all(
        math.isfinite(v) for v in (s.lock_timeout_seconds, s.retry_backoff_seconds, s.slo.freshness_minutes)
    )
    prunable([D1, "2026-01-10"], s.retention_load_dates, "", "2026-01-10")
    assert ReplayResource.for_settings(s).settings() == s  # every Dagster step sees the same values
    for partitions in (load_date_partitions(s), business_date_partitions(s)):
        partitions.get_partition_keys(current_time=now)


def _accepted_or_named(
    home: Path, env: dict[str, str], name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, err = status(home, env, capsys)
    # 1 is a value that works as written: e.g. limits.manifest_bytes 1 blocks every delivery
    # (status names the manifest over its limit); a crash raises out of main and fails here
    assert code in (0, 1, 2) and "Traceback" not in err, err
    if code == 2:
        assert "REPLAY_USAGE" in err and name in err, err
        return
    with _environment({"REPLAY_ASSETS_NOW": NOW, **env}):
        exercise(settings_from_environment(str(home)))


@CASES
@given(key=st.sampled_from(FILE_KEYS), value=HOSTILE)
def test_every_settings_file_key_takes_hostile_values_without_a_traceback(
    applied_home: Path, capsys: pytest.CaptureFixture[str], key: str, value: object
) -> None:
    """SPEC 10 (v4): each key of replay-assets.json, fed any JSON value, is accepted with a value
    that works (``status`` over an applied date, the partitions, the horizon, the Dagster
    resource) or refused with exit 2 naming the key; never a traceback."""
    (applied_home / CONFIG_FILE).write_text(json.dumps({key: value}), encoding="utf-8")
    try:
        _accepted_or_named(applied_home, {}, key, capsys)
    finally:
        (applied_home / CONFIG_FILE).unlink()


@CASES
@given(where=st.sampled_from(NESTED), value=HOSTILE)
def test_every_nested_setting_takes_hostile_values_without_a_traceback(
    applied_home: Path, capsys: pytest.CaptureFixture[str], where: tuple[str, str], value: object
) -> None:
    """SPEC 10 (v4): the fields of ``slo`` and ``limits`` are checked like top-level values,
    named ``slo.field`` / ``limits.field``."""
    section, field = where
    (applied_home / CONFIG_FILE).write_text(json.dumps({section: {field: value}}), encoding="utf-8")
    try:
        _accepted_or_named(applied_home, {}, f"{section}.{field}", capsys)
    finally:
        (applied_home / CONFIG_FILE).unlink()


@CASES
@given(name=st.sampled_from(ENV_NAMES), value=HOSTILE)
def test_every_environment_variable_takes_hostile_values_without_a_traceback(
    applied_home: Path, capsys: pytest.CaptureFixture[str], name: str, value: object
) -> None:
    """SPEC 10 (v4): each REPLAY_ASSETS_* variable, set to any text, is accepted with a value
    that works or refused with exit 2 naming the variable; never a traceback."""
    text = _text(value).replace("\x00", "")  # the only character an environment cannot hold
    if name == "REPLAY_ASSETS_WAREHOUSE" and text == "spark":
        text = "duckdb"  # a valid engine choice; the Spark engine has its own tests
    _accepted_or_named(applied_home, {name: text}, name, capsys)


def test_the_schema_declares_every_setting_the_code_reads() -> None:
    """SPEC 10 (v4): one typed schema for every key of replay-assets.json and every
    REPLAY_ASSETS_* variable the package reads (the home's path is the one free-form value)."""
    named = set()
    for path in PACKAGE.rglob("*.py"):
        named |= set(re.findall(r"REPLAY_ASSETS_[A-Z_]*[A-Z]", path.read_text(encoding="utf-8")))
    assert named - {"REPLAY_ASSETS_HOME"} <= set(ENV_NAMES)
    assert set(FILE_KEYS) >= {
        "slo",
        "limits",
        "retention_load_dates",
        "spark_remote",
        "debezium",
        "upcasters",
    }
    with pytest.raises(SettingsError, match="unknown setting"):
        settings_from({}, "home", json.dumps({"no_such_setting": 1}))


# --------------------------------------------------------------------------- the settings file itself


def _replay_assets(
    home: Path, *args: str, env: dict[str, str], timeout: float
) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("REPLAY_ASSETS_", "DAGSTER_HOME"))}
    return subprocess.run(
        [sys.executable, "-m", "replay_assets.entrypoints.cli", *args, "--home", str(home)],
        env={**base, "REPLAY_ASSETS_NOW": NOW, **env},
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def test_a_fifo_settings_file_is_refused_without_hanging(tmp_path: Path) -> None:
    """SPEC 10 (v4): replay-assets.json is opened non-blocking as a regular file only: a FIFO
    nobody writes to is exit 2 naming the file, not a command that waits forever."""
    os.mkfifo(tmp_path / CONFIG_FILE)
    done = _replay_assets(tmp_path, "status", env={}, timeout=60)
    assert done.returncode == 2, done.stderr
    assert CONFIG_FILE in done.stderr and "FIFO" in done.stderr


@pytest.mark.parametrize("kind", ["directory", "symlink", "dangling symlink", "oversized", "not UTF-8"])
def test_a_settings_file_that_is_no_small_regular_file_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    """SPEC 10 (v4): replay-assets.json is read with the rules of deliveries (regular file, no
    symlink followed, bounded): anything else is exit 2 naming the file."""
    home, target = tmp_path / "home", tmp_path / "elsewhere.json"
    home.mkdir()
    target.write_text(json.dumps({"retention_load_dates": 3}), encoding="utf-8")
    path = home / CONFIG_FILE
    if kind == "directory":
        path.mkdir()
    elif kind == "symlink":
        path.symlink_to(target)
    elif kind == "dangling symlink":
        path.symlink_to(tmp_path / "missing.json")
    elif kind == "oversized":
        path.write_text('{"slo": {}}' + " " * (2 << 20), encoding="utf-8")
    else:
        path.write_bytes(b'{"fail_once": "\xff"}')
    code, err = status(home, {}, capsys)
    assert code == 2, err
    assert CONFIG_FILE in err
    assert target.read_text(encoding="utf-8") == json.dumps({"retention_load_dates": 3})


@pytest.mark.parametrize(
    ("key", "value", "variable"),
    [
        ("fail_once", "current_state", "REPLAY_ASSETS_FAIL_ONCE"),
        ("fail_point", "apply.before_commit", "REPLAY_ASSETS_FAIL_POINT"),
        ("fixed_now", "2026-01-01T00:00:00+00:00", "REPLAY_ASSETS_NOW"),
    ],
)
def test_the_clock_and_the_rehearsal_faults_are_refused_in_the_settings_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], key: str, value: str, variable: str
) -> None:
    """A production settings file never injects a fault or freezes the clock: the key, even with a
    well-formed value, is a usage error naming the one variable that sets it."""
    (tmp_path / CONFIG_FILE).write_text(json.dumps({key: value}), encoding="utf-8")
    before = files_of(tmp_path)
    code, err = status(tmp_path, {}, capsys)
    assert code == 2
    assert key in err and variable in err
    assert files_of(tmp_path) == before


# --------------------------------------------------------------------------- the Spark Connect address


@pytest.mark.parametrize(
    "remote",
    [
        "sc://",
        "sc://:15002",
        "sc://host",
        "sc://host:0",
        "sc://host:65536",
        "sc://host:port",
        "http://host:15002",
        "sc://host:15002/path",
        "sc://user:secret@host:15002",
        "sc://host:15002?x=1",
        "sc://ho st:15002",
        "locale",
    ],
)
def test_a_spark_address_that_is_not_sc_host_port_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], remote: str
) -> None:
    """SPEC 10 (v4): REPLAY_ASSETS_SPARK_REMOTE is ``local`` or ``sc://HOST:PORT`` (port 1..65535),
    checked when the settings are read: exit 2 naming the setting, never the address (it may
    carry a token)."""
    code, err = status(tmp_path, {"REPLAY_ASSETS_SPARK_REMOTE": remote}, capsys)  # whatever the engine
    assert code == 2, err
    assert "REPLAY_ASSETS_SPARK_REMOTE" in err and "secret" not in err
    (tmp_path / CONFIG_FILE).write_text(json.dumps({"spark_remote": remote}), encoding="utf-8")
    code, err = status(tmp_path, {}, capsys)
    assert (code, "spark_remote" in err) == (2, True)


@pytest.mark.parametrize(
    "remote",
    ["local", "sc://spark.internal:15002", "sc://10.0.0.7:1/;use_ssl=true;token=t", "sc://[::1]:65535"],
)
def test_a_well_formed_spark_address_is_accepted(remote: str) -> None:
    """SPEC 10 "Scale-out": the documented forms, with Spark Connect's ``/;key=value`` options."""
    assert settings_from({"REPLAY_ASSETS_SPARK_REMOTE": remote}, "home", None).spark_remote == remote


@pytest.fixture
def closed_port() -> int:
    """A loopback port nothing listens on (bound, then closed)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A loopback port that accepts connections and never answers."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(16)
        yield int(s.getsockname()[1])


@pytest.mark.parametrize("which", ["closed_port", "silent_port"])
def test_an_unreachable_spark_server_is_a_clear_error_within_the_deadline(
    tmp_path: Path, request: pytest.FixtureRequest, which: str
) -> None:
    """SPEC 10 (v4): the Spark Connect server is reached with a deadline
    (``REPLAY_ASSETS_SPARK_CONNECT_TIMEOUT_SECONDS``): a closed port or a server that never
    answers is exit 1 with REPLAY_WAREHOUSE_UNREACHABLE naming the setting, not a hang."""
    port = request.getfixturevalue(which)
    env = {
        "REPLAY_ASSETS_WAREHOUSE": "spark",
        "REPLAY_ASSETS_SPARK_REMOTE": f"sc://127.0.0.1:{port}",
        "REPLAY_ASSETS_SPARK_CONNECT_TIMEOUT_SECONDS": "2",
    }
    started = time.monotonic()
    done = _replay_assets(tmp_path, "status", env=env, timeout=90)
    elapsed = time.monotonic() - started
    assert done.returncode == 1, done.stderr
    assert "REPLAY_WAREHOUSE_UNREACHABLE" in done.stderr and "REPLAY_ASSETS_SPARK_REMOTE" in done.stderr
    assert "Traceback" not in done.stderr
    assert elapsed < 2 + 30  # the deadline, plus the interpreter's and pyspark's start


@pytest.mark.parametrize(
    ("field", "value", "key"),
    [
        ("retention_load_dates", 0, "retention_load_dates"),
        ("lock_timeout_seconds", float("nan"), "lock_timeout_seconds"),
        ("future_tolerance_days", 10**9, "future_tolerance_days"),
        ("limits", {"line_bytes": 0}, "limits.line_bytes"),
        ("slo", {"freshness_minutes": -1}, "slo.freshness_minutes"),
        ("upcasters", {"erp": {"02": {}}}, "upcasters.erp.02"),
        ("spark_remote", "sc://", "spark_remote"),
    ],
)
def test_the_dagster_resources_fields_pass_the_one_settings_schema(
    tmp_path: Path, field: str, value: object, key: str
) -> None:
    """SPEC 10 (v4): every settings value is type and range checked when read, also the fields of
    the Dagster resource an operator may edit in the launchpad: refused naming the key."""
    resource = ReplayResource.for_settings(settings_from({}, str(tmp_path), None))
    edited = ReplayResource(**{**resource.__dict__, field: value})
    with pytest.raises(SettingsError, match=re.escape(key)):
        edited.settings()
    assert resource.settings() == settings_from({}, str(tmp_path), None)
