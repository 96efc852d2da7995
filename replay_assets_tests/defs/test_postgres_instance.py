"""Dagster's production deployment: the same definitions on an instance whose run, event-log and
schedule storage is a real PostgreSQL server (``deploy/postgres/dagster.yaml``), chosen with
``REPLAY_ASSETS_DAGSTER_YAML`` and ``DAGSTER_PG_URL`` alone."""

import os
import subprocess
import sys
import uuid
from pathlib import Path

import dagster as dg
import pytest
import yaml

from replay_assets.demo.scenarios import seed001
from replay_assets.entrypoints.cli import main
from replay_assets.entrypoints.runner import PROJECT_INSTANCE_CONFIG
from replay_assets.entrypoints.session import Session
from replay_assets_tests.helpers import settings_for
from replay_assets_tests.postgres_server import Server

PROJECT = Path(__file__).resolve().parents[2]
DEPLOY = PROJECT / "deploy" / "postgres" / "dagster.yaml"
SECRET = "pw-" + uuid.uuid4().hex  # a password in the URL (trust auth ignores it): never echoed
CONSUMER_SQL = (
    "SELECT * EXCLUDE (load_date) FROM current_orders ORDER BY order_id, line_no",
    "SELECT * EXCLUDE (certified_at) FROM daily_aggregates ORDER BY business_date, store_id",
)


def test_the_deployment_file_is_the_embedded_default_but_its_storage() -> None:
    embedded = yaml.safe_load(PROJECT_INSTANCE_CONFIG.read_text(encoding="utf-8"))
    deployed = yaml.safe_load(DEPLOY.read_text(encoding="utf-8"))
    assert deployed.pop("storage") == {"postgres": {"postgres_url": {"env": "DAGSTER_PG_URL"}}}
    # the instance class changes the default (SQLite) storage, which PostgreSQL's replaces, and
    # reads a plain postgresql:// URL with dagster-postgres's driver
    assert deployed["instance_class"] == {"module": "replay_assets.defs.instance", "class": "ReplayInstance"}
    assert deployed == embedded  # lanes, pools, run monitoring and retries as on one machine


@pytest.fixture
def database(postgres: Server, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> str:
    """A new database of the session's server as this test's instance storage (the environment
    a deployment sets); returns its name."""
    name = f"dagster_{uuid.uuid4().hex[:12]}"
    url = postgres.create_database(name).replace("postgres@", f"postgres:{SECRET}@")
    monkeypatch.setenv("DAGSTER_PG_URL", url)
    monkeypatch.setenv("REPLAY_ASSETS_DAGSTER_YAML", str(DEPLOY))
    monkeypatch.setenv("REPLAY_ASSETS_NOW", seed001.NOW)
    monkeypatch.delenv("DAGSTER_HOME", raising=False)
    monkeypatch.delenv("REPLAY_ASSETS_FAIL_POINT", raising=False)
    return name


def _consumer_tables(home: Path) -> list[list[dict[str, object]]]:
    s = Session(settings_for(home, seed001.NOW), home / "dagster")
    tables = [s.query(sql) for sql in CONSUMER_SQL]
    s.close()
    return tables


def test_run_on_postgres_records_its_runs_there_and_equals_the_embedded_instance(
    database: str,
    postgres: Server,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    home = tmp_path / "home"
    seed001.deliver_baseline(home / "landing")
    seed001.deliver_cdc(home / "landing", "B20260921-CDC-A", "2026-09-21", "2026-09-21T08:12:00Z")
    assert main(["run", "--home", str(home)]) == 0
    out = capsys.readouterr().out
    statuses = [s for (s,) in postgres.query(database, "SELECT status FROM runs")]
    assert statuses and set(statuses) == {"SUCCESS"} and f"{len(statuses)} runs, 0 failed" in out
    materialized = postgres.query(
        database, "SELECT count(*) FROM event_logs WHERE dagster_event_type = 'ASSET_MATERIALIZATION'"
    )
    assert materialized[0][0] > 0
    assert not list((home / "dagster").rglob("*.db"))  # nothing of the instance in SQLite files
    assert main(["run", "--home", str(home)]) == 0  # a second run finds nothing pending
    assert "0 runs, 0 failed" in capsys.readouterr().out
    assert postgres.query(database, "SELECT count(*) FROM runs")[0][0] == len(statuses)
    # the URL's password is read when the instance loads and written nowhere: not in any table
    # of the instance database, not in the home's files
    assert SECRET not in postgres.dump(database)
    assert not [p for p in home.rglob("*") if p.is_file() and SECRET.encode() in p.read_bytes()]
    # the same deliveries on the embedded default give the same consumer tables
    embedded = tmp_path / "embedded"
    seed001.deliver_baseline(embedded / "landing")
    seed001.deliver_cdc(embedded / "landing", "B20260921-CDC-A", "2026-09-21", "2026-09-21T08:12:00Z")
    monkeypatch.delenv("REPLAY_ASSETS_DAGSTER_YAML")
    assert main(["run", "--home", str(embedded)]) == 0
    assert (embedded / "dagster" / "history" / "runs.db").exists()
    assert _consumer_tables(home) == _consumer_tables(embedded)


@pytest.mark.slow
def test_a_plain_postgresql_url_works_in_every_process_that_loads_the_instance(
    database: str, postgres: Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``DAGSTER_PG_URL=postgresql://...``, the form Dagster's docs use (no driver named): ``run``
    records its runs on the server, and another process loading the home's instance from
    ``DAGSTER_HOME`` alone (as the webserver, the daemon and the run workers do) reads them."""
    plain = os.environ["DAGSTER_PG_URL"].replace("postgresql+psycopg2://", "postgresql://", 1)
    assert plain.startswith("postgresql://postgres:")
    monkeypatch.setenv("DAGSTER_PG_URL", plain)
    home = tmp_path / "home"
    seed001.deliver_baseline(home / "landing")
    assert main(["run", "--home", str(home)]) == 0
    statuses = [s for (s,) in postgres.query(database, "SELECT status FROM runs")]
    assert statuses and set(statuses) == {"SUCCESS"}
    count_runs = "import dagster as dg; print(len(dg.DagsterInstance.get().get_runs()))"
    env = {**os.environ, "DAGSTER_HOME": str(home / "dagster")}
    child = subprocess.run(
        [sys.executable, "-c", count_runs], env=env, capture_output=True, text=True, check=False, timeout=120
    )
    assert child.returncode == 0, child.stderr[-2000:]
    assert child.stdout.split()[-1] == str(len(statuses))


def test_a_killed_run_is_marked_failed_on_postgres_and_its_slots_freed(
    database: str, postgres: Server, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "home"
    session = Session(settings_for(home, seed001.NOW, dagster_yaml=DEPLOY), home / "dagster")
    seed001.deliver_baseline(session.settings.landing)
    assert session.run_in_subprocess(fail_point="apply.before_commit") == -9
    started = session.instance.get_runs(filters=dg.RunsFilter(statuses=[dg.DagsterRunStatus.STARTED]))
    assert len(started) == 1
    # pools are held per run (granularity: run): the queue counts an active run as using every
    # pool its steps name, so the killed run, still STARTED, would keep the writer pool taken
    assert "duckdb_writer" in (started[0].run_op_concurrency.all_pools or set())
    session.close()
    active = "SELECT count(*) FROM runs WHERE status IN ('STARTED', 'STARTING', 'NOT_STARTED')"
    assert postgres.query(database, active)[0][0] == 1
    assert main(["run", "--home", str(home)]) == 0
    assert "1 orphaned runs marked failed" in capsys.readouterr().out
    assert postgres.query(database, active)[0][0] == 0  # nothing holds the pool any more
    held = "SELECT count(*) FROM concurrency_slots WHERE run_id IS NOT NULL"
    assert postgres.query(database, held)[0][0] == 0
    statuses = dict(postgres.query(database, "SELECT run_id, status FROM runs"))
    assert statuses[started[0].run_id] == "FAILURE"
    assert set(statuses.values()) == {"FAILURE", "SUCCESS"}


def test_instance_setting_errors_name_the_variable_never_the_url(
    database: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("DAGSTER_PG_URL")
    assert main(["run", "--home", str(tmp_path / "home")]) == 2
    err = capsys.readouterr().err
    assert "REPLAY_USAGE" in err and "DAGSTER_PG_URL" in err and "Stack Trace" not in err
    # a server that does not answer (a closed port): after dagster-postgres's own retries
    monkeypatch.setenv("DAGSTER_PG_URL", f"postgresql+psycopg2://postgres:{SECRET}@127.0.0.1:1/{database}")
    assert main(["run", "--home", str(tmp_path / "home")]) == 1
    out, err = capsys.readouterr()
    assert "REPLAY_INSTANCE_UNREACHABLE" in err and "DAGSTER_PG_URL" in err
    assert SECRET not in out + err
    monkeypatch.setenv("REPLAY_ASSETS_DAGSTER_YAML", str(tmp_path / "missing.yaml"))
    assert main(["run", "--home", str(tmp_path / "home")]) == 2
    assert "REPLAY_ASSETS_DAGSTER_YAML" in capsys.readouterr().err


def test_the_ui_records_its_sample_on_the_named_instance(
    database: str, postgres: Server, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "home"
    assert main(["ui", "--home", str(home), "--dry-run"]) == 0
    assert "landing the sample scenario" in capsys.readouterr().out
    # the instance the UI serves is created on PostgreSQL; the sample's runs come from its daemon
    assert postgres.query(database, "SELECT count(*) FROM runs")[0][0] == 0
    assert (home / "dagster" / "dagster.yaml").read_bytes() == DEPLOY.read_bytes()
    assert not list((home / "dagster").rglob("*.db"))
