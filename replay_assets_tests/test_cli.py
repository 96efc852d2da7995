"""The command line, in-process with a temporary home; exit codes and printed evidence."""

import json
import subprocess
import sys
import time
from pathlib import Path

import dagster as dg
import polars as pl
import pytest
from dagster._daemon.types import DaemonHeartbeat  # Dagster's own type for a daemon heartbeat

from replay_assets.demo.scenarios import fixture, seed000, seed001
from replay_assets.entrypoints.cli import main
from replay_assets.entrypoints.runner import instance_for
from replay_assets.entrypoints.session import Session
from replay_assets_tests.core.test_debezium import INVENTORY
from replay_assets_tests.helpers import settings_for


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("REPLAY_ASSETS_NOW", seed001.NOW)
    monkeypatch.delenv("DAGSTER_HOME", raising=False)
    monkeypatch.delenv("REPLAY_ASSETS_FAIL_POINT", raising=False)
    return tmp_path / "home"


def lines_file(tmp_path: Path, events: list[dict]) -> Path:
    path = tmp_path / "events.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")
    return path


def test_land_run_export(home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = lines_file(tmp_path, seed001.baseline_events())
    assert (
        main(
            [
                "land",
                str(base),
                "--source",
                "erp",
                "--load-date",
                "2026-09-20",
                "--adapter",
                "seed001",
                "--ready-at",
                "2026-09-20T08:00:00Z",
                "--home",
                str(home),
            ]
        )
        == 0
    )
    assert main(["run", "--home", str(home)]) == 0
    out = capsys.readouterr().out
    assert "apply:2026-09-20" in out and "1 load dates applied" in out
    assert main(["export", "current_orders", "--home", str(home), "--format", "jsonl"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert len(rows) == 8 and all(r["status"] == "active" for r in rows)
    target = tmp_path / "daily.parquet"
    assert (
        main(
            [
                "export",
                "daily_aggregates",
                "--home",
                str(home),
                "--format",
                "parquet",
                "--output",
                str(target),
            ]
        )
        == 0
    )
    assert pl.read_parquet(target)["amount_minor"].sum() == 690
    assert main(["export", "current_customers", "--as-of", "2026-09-19", "--home", str(home)]) == 0
    assert capsys.readouterr().out.strip() == "customer_id,name,segment,status,version,source_seq,load_date"


def test_a_schema_blocked_batch_lands_again_once_the_settings_file_declares_its_upcaster(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    seed001.deliver_baseline(home / "landing")
    seed001.deliver_breaking(home / "landing", "2026-09-21")
    reland = ["resolve", "--batch-id", "B20260923-CDC-D", "--action", "reland", "--note", "v2 declared"]
    assert main(["run", "--home", str(home)]) == 1
    declared = {
        "rename": {"after.extended_amount_cents": "after.amount_minor"},
        "add": {"after.customer_id": "C001", "after.product_id": "P100", "after.quantity": 2}
        | {"after.cost_minor": 60, "after.status": "active"},
    }
    (home / "replay-assets.json").write_text(json.dumps({"upcasters": {"erp": {"2": declared}}}))
    capsys.readouterr()
    assert main([*reland, "--home", str(home)]) == 0
    assert "to be landed again" in capsys.readouterr().out
    assert main(["run", "--home", str(home)]) == 0
    assert main(["export", "current_orders", "--home", str(home), "--format", "jsonl"]) == 0
    capsys.readouterr()
    assert main(["status", "--json", "--home", str(home)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert {s["status"] for s in report["partitions"] if s["asset"] == "current_orders"} == {"CERTIFIED"}
    # a second relanding is refused: the batch blocks nothing now
    assert main([*reland, "--home", str(home)]) == 2
    assert "not blocked by the schema gate" in capsys.readouterr().err
    # a malformed declaration is a usage error naming the setting, before anything runs
    (home / "replay-assets.json").write_text(json.dumps({"upcasters": {"erp": {"2": {"cast": {}}}}}))
    assert main(["status", "--home", str(home)]) == 2
    assert "unknown operation 'cast'" in capsys.readouterr().err


def test_land_takes_debezium_files_through_the_declared_mapping_and_keeps_their_evidence(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fixtures = Path(__file__).parent / "fixtures"
    home.mkdir(parents=True)
    mappings = {source: {"tables": INVENTORY} for source in ("pg", "mysql")}
    config = {"business_date_start": "2016-01-01", "debezium": mappings}
    (home / "replay-assets.json").write_text(json.dumps(config))
    for source, name in (("pg", "debezium_postgres.jsonl"), ("mysql", "debezium_mysql.jsonl")):
        land = ["land", str(fixtures / name), "--source", source, "--load-date", "2026-09-21"]
        assert main([*land, "--adapter", "debezium", "--batch-id", f"DBZ-{source}", "--home", str(home)]) == 0
        assert "Kafka tombstones" in capsys.readouterr().out
    assert main(["run", "--home", str(home)]) == 0
    capsys.readouterr()
    assert main(["export", "current_orders", "--home", str(home), "--format", "jsonl"]) == 0
    orders = {r["order_id"]: r for r in map(json.loads, capsys.readouterr().out.splitlines())}
    assert {k: (r["status"], r["quantity"]) for k, r in orders.items()} == {
        "10001": ("deleted", None),
        "10002": ("active", 3),
        "10003": ("active", 2),
        "10005": ("deleted", None),
        "10006": ("active", 4),
    }
    assert main(["export", "current_customers", "--home", str(home), "--format", "jsonl"]) == 0
    names = {r["customer_id"]: r["name"] for r in map(json.loads, capsys.readouterr().out.splitlines())}
    assert names == {"1001": "Anne Marie", "1002": "George", "1003": "Edward", "1004": "Anne Marie"}
    with Session(settings_for(home, seed001.NOW), home / "dagster").pipeline.warehouse.connect() as con:
        kept = con.execute(
            """SELECT batch_id, count(*), count(line_number), count(reason),
                   count(DISTINCT json_extract_string(evidence, '$.transaction.id'))
               FROM source_records GROUP BY 1 ORDER BY 1"""
        ).fetchall()
    assert kept == [("DBZ-mysql", 6, 5, 0, 1), ("DBZ-pg", 10, 9, 0, 4)]
    assert main(["export", "source_records", "--home", str(home), "--format", "jsonl"]) == 0
    exported = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert len(exported) == 16 and "envelope" not in exported[0]  # the evidence, not the payloads
    created = next(r for r in exported if r["batch_id"] == "DBZ-pg" and r["record_number"] == 5)
    assert json.loads(created["evidence"])["transaction"]["id"] == "556:24023296"


def test_run_exits_1_and_says_why_when_blocked_then_resolve(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    seed001.deliver_baseline(home / "landing")
    seed001.deliver_breaking(home / "landing", "2026-09-21")
    assert main(["run", "--home", str(home)]) == 1
    out = capsys.readouterr().out
    assert "2026-09-21 BLOCKED" in out and "schema_version" in out and "B20260923-CDC-D" in out
    assert (
        main(
            [
                "resolve",
                "--batch-id",
                "B20260923-CDC-D",
                "--action",
                "skip",
                "--note",
                "v2 later",
                "--home",
                str(home),
            ]
        )
        == 0
    )
    assert main(["run", "--home", str(home)]) == 0
    capsys.readouterr()
    assert main(["status", "--json", "--home", str(home)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert {s["status"] for s in report["partitions"] if s["asset"] == "current_orders"} == {"CERTIFIED"}
    steps = {(c["step"], c["batch_id"]) for c in report["costs"]}
    assert ("land", "B20260920-BASELINE") in steps and ("apply", None) in steps
    assert all(c["cpu_seconds"] >= 0 and c["rows_written"] >= 0 for c in report["costs"])
    assert main(["status", "--home", str(home)]) == 0
    table = capsys.readouterr().out
    header = ["asset", "partition", "status", "last", "good", "SLO", "fresh/compl/dur/avail", "reason"]
    assert table.splitlines()[0].split() == header
    assert {s["load_date"] for s in report["slos"]} == {"2026-09-20", "2026-09-21"}
    assert ["current_orders", "2026-09-21", "CERTIFIED", "v1"] in [
        line.split()[:4] for line in table.splitlines()
    ]


def test_run_refuses_while_a_daemon_heartbeat_is_fresh(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    instance = instance_for(home / "dagster")
    instance.add_daemon_heartbeat(DaemonHeartbeat(time.time(), "SENSOR", "other-host", []))
    instance.dispose()
    assert main(["run", "--home", str(home)]) == 1
    assert "REPLAY_DAEMON_RUNNING" in capsys.readouterr().err


def test_run_marks_a_killed_run_failed_and_frees_its_slots(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    session = Session(settings_for(home, seed001.NOW), home / "dagster")
    seed001.deliver_baseline(session.settings.landing)
    assert session.run_in_subprocess(fail_point="apply.before_commit") == -9
    started = session.instance.get_runs(filters=dg.RunsFilter(statuses=[dg.DagsterRunStatus.STARTED]))
    assert len(started) == 1
    session.close()
    assert main(["run", "--home", str(home)]) == 0
    assert "1 orphaned runs marked failed" in capsys.readouterr().out
    session = Session(settings_for(home, seed001.NOW), home / "dagster")
    assert not session.instance.get_runs(filters=dg.RunsFilter(statuses=[dg.DagsterRunStatus.STARTED]))
    assert session.query("SELECT count(*) AS n FROM load_dates")[0]["n"] == 1
    session.close()


def test_the_command_leaves_no_write_ahead_log_when_it_exits_past_the_final_collection(
    home: Path,
) -> None:
    """``python -m`` and the console script exit through ``entry``, which freezes the heap
    instead of collecting it: every DuckDB and SQLite connection must already be closed, or
    its log would stay beside the file."""
    session = Session(settings_for(home, seed001.NOW), home / "dagster")
    seed001.deliver_baseline(session.settings.landing)
    session.close()
    command = [sys.executable, "-m", "replay_assets.entrypoints.cli", "run", "--home", str(home)]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert "1 load dates applied" in done.stdout
    logs = [p.name for p in home.rglob("*") if p.name.endswith((".wal", "-wal", "-shm", "-journal"))]
    assert logs == []
    assert (home / "warehouse.duckdb").exists() and list((home / "dagster").rglob("*.db"))


def test_usage_errors_exit_2(home: Path) -> None:
    assert main(["export", "no_such_table", "--home", str(home)]) == 2
    assert main(["export", "daily_aggregates", "--format", "parquet", "--home", str(home)]) == 2


def test_a_parquet_delivery_with_the_same_columns_applies(home: Path, tmp_path: Path) -> None:
    events = [json.loads(line) for line in seed001.native(seed001.baseline_events())]
    target = tmp_path / "baseline.parquet"
    pl.DataFrame(events, infer_schema_length=None).write_parquet(target)
    assert (
        main(
            [
                "land",
                str(target),
                "--source",
                "erp",
                "--load-date",
                "2026-09-20",
                "--ready-at",
                "2026-09-20T08:00:00Z",
                "--home",
                str(home),
            ]
        )
        == 0
    )
    assert main(["run", "--home", str(home)]) == 0
    session = Session(settings_for(home, seed001.NOW), home / "dagster")
    assert session.query("SELECT active_lines, amount_minor FROM snapshots")[0] == {
        "active_lines": 8,
        "amount_minor": 690,
    }
    assert session.query("SELECT count(*) AS n FROM rejected_events")[0]["n"] == 0
    session.close()


def test_recovery_commands_read_the_journal_without_dagster(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    seed001.deliver_baseline(home / "landing")
    assert main(["run", "--home", str(home)]) == 0
    capsys.readouterr()
    assert main(["recovery", "inspect", "--home", str(home)]) == 0
    assert capsys.readouterr().out.strip() == "no operation in doubt"
    session = Session(settings_for(home, seed001.NOW), home / "dagster")
    [op] = session.query("SELECT operation_id FROM operations WHERE kind = 'apply_load_date'")
    session.close()
    assert (
        main(["recovery", "inspect", "--operation-id", op["operation_id"], "--json", "--home", str(home)])
        == 0
    )
    report = json.loads(capsys.readouterr().out)
    assert report["state"] == "COMPLETE" and report["fence"] is True
    assert [a["to"] for a in report["audit"]] == [
        "PREPARING",
        "PREPARED",
        "COMMITTING",
        "TARGET_COMMITTED",
        "COMMITTED_INCOMPLETE",
        "COMPLETE",
    ]
    assert main(["recovery", "plan", "--operation-id", op["operation_id"], "--home", str(home)]) == 0
    assert "nothing to do" in capsys.readouterr().out
    assert (
        main(
            [
                "recovery",
                "apply",
                "--operation-id",
                op["operation_id"],
                "--action",
                "retry",
                "--note",
                "x",
                "--home",
                str(home),
            ]
        )
        == 1
    )
    assert "REPLAY_RECOVERY_CONFLICT" in capsys.readouterr().err
    assert main(["recovery", "apply", "--operation-id", op["operation_id"], "--home", str(home)]) == 2


def test_land_takes_a_seed000_document_one_batch_at_a_time(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`land --adapter seed000 --batch-id B` lands batch B of a seed-000 document with its
    records numbered over the document's delivery order: the same lines the seed-000 scenario
    delivers, and the seed's final state."""
    document = tmp_path / "demo_batches.json"
    document.write_text(json.dumps(fixture("seed000_demo_batches.json")), encoding="utf-8")
    land = ["land", str(document), "--source", seed000.SOURCE, "--adapter", "seed000", "--home", str(home)]
    for batch, day in seed000.LOAD_DATES.items():
        if batch in fixture("seed000_demo_batches.json")["delivery_sequence"]:
            args = [*land, "--batch-id", batch, "--load-date", day, "--ready-at", f"{day}T06:00:00Z"]
            assert main(args) == 0
            landed = home / "landing" / seed000.SOURCE / day / f"{batch}.jsonl"
            assert landed.read_text(encoding="utf-8").splitlines() == seed000.batches()[batch]
    assert main(["run", "--home", str(home)]) == 0
    capsys.readouterr()
    assert main(["export", "current_orders", "--home", str(home), "--format", "jsonl"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    expected = fixture("seed000_expected_final.json")["orders"]
    assert sorted((r["order_id"], r["status"], r["amount_minor"]) for r in rows) == [
        (o["order_id"], o["status"], o["amount_minor"]) for o in expected
    ]
    assert main([*land, "--load-date", "2026-01-05"]) == 2  # which batch: required
    assert "--adapter seed000 needs --batch-id" in capsys.readouterr().err
    assert main([*land, "--load-date", "2026-01-05", "--batch-id", "nope"]) == 2
    assert "batch 'nope' is not in its delivery_sequence" in capsys.readouterr().err
    lines = lines_file(tmp_path, seed001.baseline_events())
    assert main([*land[:1], str(lines), *land[2:], "--load-date", "2026-01-05", "--batch-id", "x"]) == 2
    assert "events.jsonl: not a seed-000 document" in capsys.readouterr().err
    document.write_text(json.dumps({"batches": [{"batch_id": "initial"}]}), encoding="utf-8")
    assert main([*land, "--load-date", "2026-01-05", "--batch-id", "initial"]) == 2
    assert "demo_batches.json: not a seed-000 document" in capsys.readouterr().err


def test_demo_refuses_a_folder_that_already_holds_a_demo_home(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    earlier = tmp_path / "seed001" / "warehouse.duckdb"
    earlier.parent.mkdir()
    earlier.write_bytes(b"an earlier demo's warehouse")
    assert main(["demo", "--home", str(tmp_path)]) == 2
    assert "seed001" in capsys.readouterr().err
    assert earlier.read_bytes() == b"an earlier demo's warehouse"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["seed001"]
