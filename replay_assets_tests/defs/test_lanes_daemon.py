"""Lanes that really isolate (SPEC 4), proven with the real daemon and webserver on loopback, on
the embedded instance and on the PostgreSQL one (`deploy/postgres/dagster.yaml`): a
backfill of historical partitions launched from the CLI, another launched through the webserver's
GraphQL API the way the UI's backfill dialog does, and current loads picked up by the sensor, all
at once. Observed lane concurrency stays within the limits, no run fails on the warehouse lock,
and the final consumer tables equal a serial run's."""

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import dagster as dg
import pytest

from replay_assets.core.errors import ErrorCode, ReplayError
from replay_assets.core.events import canonical_json
from replay_assets.entrypoints.cli import main
from replay_assets.entrypoints.runner import PROJECT_INSTANCE_CONFIG
from replay_assets.entrypoints.session import Session
from replay_assets.storage.landing.deliveries import write_delivery
from replay_assets.usecases.publish import pending_restatements
from replay_assets_tests.helpers import settings_for
from replay_assets_tests.ports import free_port
from replay_assets_tests.postgres_server import Server

PROJECT = Path(__file__).resolve().parents[2]
POSTGRES_INSTANCE = PROJECT / "deploy" / "postgres" / "dagster.yaml"
NOW = "2026-09-10T12:00:00Z"
DAYS = [f"2026-09-0{d}" for d in range(1, 5)]
HISTORICAL, CURRENT = DAYS[:2], DAYS[2:]
LIMITS = {"current": 2, "backfill": 1}
TERMINAL = {dg.DagsterRunStatus.SUCCESS, dg.DagsterRunStatus.FAILURE, dg.DagsterRunStatus.CANCELED}
CONSUMER_SQL = {
    "orders": "SELECT * EXCLUDE (load_date) FROM current_orders ORDER BY order_id, line_no",
    "daily": """SELECT store_id, business_date, order_count, line_count, units, amount_minor, cost_minor,
                gross_profit_minor FROM daily_aggregates ORDER BY business_date, store_id""",
}


def day_lines(n: int, day: str) -> list[str]:
    """Three new orders of the day, and a correction moving one of the day before to another store
    and business date (old and new groups both change)."""
    seq = 100 * (n + 1)
    lines = []
    for k in range(3):
        lines.append(_event(seq + k, f"o{n}-{k}", day, "north" if k % 2 else "south", 100 * (k + 1)))
    if n:
        lines.append(_event(seq + 3, f"o{n - 1}-0", day, "east", 250))
    return lines


def _event(seq: int, order: str, day: str, store: str, amount: int) -> str:
    return canonical_json(
        {
            "event_id": f"e{seq}",
            "source_seq": seq,
            "schema_version": 1,
            "entity": "order_line",
            "op": "upsert",
            "key": {"order_id": order, "line_no": 1},
            "event_time": f"{day}T05:00:00Z",
            "after": {
                "order_id": order,
                "line_no": 1,
                "store_id": store,
                "customer_id": "c1",
                "product_id": "p1",
                "business_date": day,
                "quantity": 1,
                "amount_minor": amount,
                "cost_minor": amount // 2,
                "status": "active",
            },
        }
    )


def deliver(landing: Path, days: list[str]) -> None:
    for day in days:
        n = DAYS.index(day)
        write_delivery(landing, "erp", day, f"B-{day}", day_lines(n, day), f"{day}T06:00:00Z")


@pytest.fixture(params=["sqlite", "postgres"])
def env(tmp_path: Path, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """The home's environment, on the embedded instance (SQLite) or on Dagster's production
    instance file with a new database of the session's real PostgreSQL server."""
    home = tmp_path / "home"
    (home / "dagster").mkdir(parents=True)
    instance: dict[str, str] = {}
    if request.param == "postgres":
        server: Server = request.getfixturevalue("postgres")
        instance["DAGSTER_PG_URL"] = server.create_database(f"lanes_{uuid.uuid4().hex[:12]}")
        instance["REPLAY_ASSETS_DAGSTER_YAML"] = str(POSTGRES_INSTANCE)
        for key, value in instance.items():
            monkeypatch.setenv(key, value)
    config = POSTGRES_INSTANCE.read_bytes() if instance else PROJECT_INSTANCE_CONFIG.read_bytes()
    (home / "dagster" / "dagster.yaml").write_bytes(config)
    return {
        **os.environ,
        **instance,
        "REPLAY_ASSETS_HOME": str(home),
        "DAGSTER_HOME": str(home / "dagster"),
        "REPLAY_ASSETS_NOW": NOW,
        "REPLAY_ASSETS_SENSOR_INTERVAL_SECONDS": "1",
    }


# `dagster-daemon run`, with the backfill daemon's pause between iterations shortened from
# Dagster's fixed 30 s (DEFAULT_DAEMON_INTERVAL_SECONDS, read by its loop at each pass) to 5 s:
# a backfill is marked complete one iteration after its last run ends, and the two 30-second
# waits were most of this test's time. Everything else is the real daemon, unchanged.
DAEMON = """import sys
import dagster._daemon.controller as controller
from dagster._daemon.cli import main
controller.DEFAULT_DAEMON_INTERVAL_SECONDS = 5
sys.argv[0] = "dagster-daemon"
sys.exit(main())"""


@contextmanager
def services(env: dict[str, str]) -> Iterator[str]:
    """The webserver and the daemon, each in its own process group; yields the GraphQL URL."""
    port = free_port()
    bin_dir = Path(sys.executable).parent
    log = open(Path(env["DAGSTER_HOME"]) / "services.log", "ab")
    commands = [
        [str(bin_dir / "dagster-webserver"), "-h", "127.0.0.1", "-p", str(port), "-w", "workspace.yaml"],
        [sys.executable, "-c", DAEMON, "run", "-w", "workspace.yaml"],
    ]
    procs = [
        subprocess.Popen(
            c, cwd=PROJECT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        for c in commands
    ]
    try:
        url = f"http://127.0.0.1:{port}"
        wait_for(lambda: _answers(f"{url}/server_info"), 120, "the webserver to answer")
        yield f"{url}/graphql"
    finally:
        for proc in procs:
            os.killpg(proc.pid, signal.SIGTERM)
        for proc in procs:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        log.close()


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return bool(response.status == 200)
    except OSError:
        return False


def wait_for(condition, timeout: float, what: str, state=None) -> None:  # type: ignore[no-untyped-def]
    """Poll ``condition``; on a timeout the error carries ``state()`` (what the processes were
    doing), so a failure seen only in CI can be read from its output."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.5)  # polling other processes: there is no event to wait on
    seen = f"\n{state()}" if state is not None else ""
    raise AssertionError(f"timed out waiting for {what}{seen}")


def runs_and_log(instance: dg.DagsterInstance, home: Path) -> str:
    """Every run's job, partition and status, and the end of the services' log."""
    runs = [
        f"{r.job_name} {r.tags.get('dagster/partition', '-')} {r.status.value}"
        for r in reversed(instance.get_runs())
    ]
    log = home / "services.log"
    tail = log.read_text(errors="replace").splitlines()[-60:] if log.exists() else []
    return "\n".join(["runs:", *runs, "services.log (end):", *tail])


LAUNCH = """mutation($params: LaunchBackfillParams!) {
  launchPartitionBackfill(backfillParams: $params) {
    __typename
    ... on LaunchBackfillSuccess { backfillId }
    ... on PythonError { message }
    ... on InvalidSubsetError { message }
  }
}"""


def graphql(url: str, query: str, variables: dict[str, object]) -> dict[str, object]:
    body = json.dumps({"query": query, "variables": variables}).encode()
    request = urllib.request.Request(url, body, {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as response:
        return dict(json.loads(response.read()))


def max_overlap(intervals: list[tuple[float, float]]) -> int:
    edges = sorted([(start, 1) for start, _ in intervals] + [(end, -1) for _, end in intervals])
    running = peak = 0
    for _, step in edges:
        running += step
        peak = max(peak, running)
    return peak


def serial_reference(home: Path) -> dict[str, object]:
    s = Session(settings_for(home, NOW), home / "dagster")
    deliver(s.settings.landing, DAYS)
    s.run()
    tables = {name: s.query(sql) for name, sql in CONSUMER_SQL.items()}
    s.close()
    return tables


def test_backfills_and_current_loads_together_stay_in_their_lanes(
    env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = Path(env["REPLAY_ASSETS_HOME"])
    s = Session(settings_for(home, NOW), home / "dagster")
    deliver(s.settings.landing, HISTORICAL)
    assert not s.run().failed  # the history, applied serially before the daemon starts
    s.close()
    deliver(home / "landing", CURRENT)  # the current loads the sensor will pick up
    for key in ("REPLAY_ASSETS_HOME", "DAGSTER_HOME", "REPLAY_ASSETS_NOW"):
        monkeypatch.setenv(key, env[key])
    with services(env) as url:
        cli = main(
            [
                "backfill",
                "--asset",
                "current_orders",
                "--from",
                HISTORICAL[0],
                "--to",
                HISTORICAL[-1],
                "--note",
                "re-audit the history",
            ]
        )
        assert cli == 0
        params = {
            "partitionsByAssets": [
                {
                    "assetKey": {"path": ["daily_aggregates"]},
                    "partitions": {"range": {"start": HISTORICAL[0], "end": HISTORICAL[-1]}},
                }
            ],
            "title": "restate history from the UI",
        }
        launched = graphql(url, LAUNCH, {"params": params})
        result = launched["data"]["launchPartitionBackfill"]  # type: ignore[index]
        assert result["__typename"] == "LaunchBackfillSuccess", result
        instance = dg.DagsterInstance.get()

        def settled() -> bool:
            backfills = instance.get_backfills()
            runs = instance.get_runs()
            done = len(backfills) == 2 and all(b.status.value != "REQUESTED" for b in backfills)
            applied = {r.tags.get("dagster/partition") for r in runs if r.tags.get("dagster/sensor_name")}
            return done and set(CURRENT) <= applied and all(r.status in TERMINAL for r in runs)

        wait_for(settled, 420, "both backfills and every current load")
        wait_for(lambda: _queue_empty(home), 120, "the restatement queue to drain")
        wait_for(lambda: all(r.status in TERMINAL for r in instance.get_runs()), 120, "the last runs")
        records = instance.get_run_records()
        instance.dispose()
    lanes: dict[str, list[tuple[float, float]]] = {"current": [], "backfill": []}
    for record in records:
        lane = record.dagster_run.tags.get("replay/lane")
        assert lane in lanes, f"run {record.dagster_run.run_id} carries no lane"
        if record.start_time and record.end_time:
            lanes[lane].append((record.start_time, record.end_time))
    if "DAGSTER_PG_URL" in env:  # every process used the PostgreSQL instance: no SQLite storage
        assert not list((home / "dagster").rglob("*.db"))
    failed = [r.dagster_run.run_id for r in records if r.dagster_run.status != dg.DagsterRunStatus.SUCCESS]
    assert failed == []  # no run failed, on the warehouse lock or otherwise
    observed = {lane: max_overlap(spans) for lane, spans in lanes.items()}
    print(f"observed lane concurrency {observed}; runs per lane { {k: len(v) for k, v in lanes.items()} }")
    assert all(1 <= observed[lane] <= LIMITS[lane] for lane in LIMITS)
    from_ui = [
        r
        for r in records
        if r.dagster_run.tags.get("dagster/backfill") and "replay/operator" not in r.dagster_run.tags
    ]
    assert from_ui and all(r.dagster_run.tags["replay/lane"] == "backfill" for r in from_ui)
    s = Session(settings_for(home, NOW), home / "dagster")
    concurrent = {name: s.query(sql) for name, sql in CONSUMER_SQL.items()}
    s.close()
    assert concurrent == serial_reference(tmp_path / "serial")


def _queue_empty(home: Path) -> bool:
    s = Session(settings_for(home, NOW), home / "dagster")
    try:
        ranges, _ = pending_restatements(s.pipeline, timeout=1)
        return not ranges
    except ReplayError as error:
        if error.code is not ErrorCode.WAREHOUSE_BUSY:
            raise
        return False  # a run holds the warehouse: ask again
    finally:
        s.close()
