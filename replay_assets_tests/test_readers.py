"""The readers (SPEC 10 "Readers"): ``status``, ``export`` and ``recovery inspect|plan`` never
take the writer lock and never write; ``status`` still shows the waiting load dates' live
statuses, exactly what the next ``run`` records. Real DuckDB files, the real CLI in-process."""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import duckdb
import pytest

from replay_assets.entrypoints.cli import main
from replay_assets.storage.db.warehouse import Warehouse, query_frame
from replay_assets.usecases.context import Pipeline
from replay_assets.usecases.operations import Operations
from replay_assets.usecases.status import record_waiting_statuses
from replay_assets_tests.helpers import drive
from replay_assets_tests.storage.test_bad_input import D1, D2, NOW, deliver, event, make_pipeline

D4 = "2026-01-04"


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """D1 applied; D2 never delivered while D4 is: D2 is MISSING, D4 waits behind it."""
    pipeline = make_pipeline(tmp_path)
    deliver(pipeline, D1, "b1", [event(1), event(2, "o2")])
    drive(pipeline)
    deliver(pipeline, D4, "b4", [event(3)])
    return tmp_path


def _tree(home: Path) -> dict[str, bytes]:
    return {str(p.relative_to(home)): p.read_bytes() for p in sorted(home.rglob("*")) if p.is_file()}


@contextmanager
def writer_lock_held(home: Path) -> Iterator[None]:
    """The writer lock taken as a writer waiting for, or between, its connections holds it."""
    fd = os.open(home / "warehouse.lock", os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        yield
    finally:
        os.close(fd)


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    return code, capsys.readouterr().out


def test_status_export_and_recovery_read_while_the_writer_lock_is_held_and_change_nothing(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (home / "replay-assets.json").write_text('{"lock_timeout_seconds": 0}')  # waiting would fail at once
    before = _tree(home)
    with writer_lock_held(home):
        code, out = _cli(capsys, "status", "--home", str(home), "--json")
        document = json.loads(out)
        assert code == 1  # D2 is missing
        assert {p["load_date"]: p["status"] for p in document["problems"]}[D2] == "MISSING"
        code, out = _cli(capsys, "status", "--home", str(home), "--update", D2)
        assert code == 0 and f"current_orders {D2}: MISSING" in out
        code, out = _cli(capsys, "export", "current_orders", "--home", str(home), "--format", "jsonl")
        assert code == 0 and sorted(json.loads(line)["order_id"] for line in out.splitlines()) == ["o1", "o2"]
        assert _cli(capsys, "recovery", "inspect", "--home", str(home), "--json")[0] == 0
    assert _tree(home) == before


def test_status_shows_exactly_what_the_next_run_records(home: Path) -> None:
    pipeline = Pipeline(make_pipeline(home).settings)
    live = Operations(pipeline).status_report()[1]["partitions"]
    record_waiting_statuses(pipeline)  # what `run` does after applying
    with pipeline.warehouse.connect() as con:
        recorded = query_frame(con, "SELECT * FROM partition_status ORDER BY asset, partition_key").to_dicts()
    assert {(r["partition_key"], r["status"]) for r in live} >= {(D2, "MISSING"), (D1, "CERTIFIED")}
    assert live == recorded


def test_the_published_copy_mirrors_the_waiting_statuses_the_run_recorded(
    home: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A reader that falls back to the published copy, or reads it as a consumer, sees the
    statuses `run` recorded for the load dates still waiting (D2 MISSING), not those of the run
    before: `run` records them before its last refresh."""
    monkeypatch.setenv("REPLAY_ASSETS_NOW", NOW)
    monkeypatch.delenv("DAGSTER_HOME", raising=False)
    code, out = _cli(capsys, "run", "--home", str(home))
    assert code == 1 and D2 in out, (code, out)  # D2 is missing
    sql = "SELECT asset, partition_key, status FROM partition_status ORDER BY ALL"
    with Warehouse(home).connect() as con:
        recorded = con.execute(sql).fetchall()
    with duckdb.connect(str(home / "published.duckdb"), read_only=True) as published:
        mirrored = published.execute(sql).fetchall()
    assert ("current_orders", D2, "MISSING") in recorded
    assert mirrored == recorded


HOLDER = """
import sys
from pathlib import Path
from replay_assets.core.manifest import parse_instant
from replay_assets.storage.home import in_progress
from replay_assets.storage.db.warehouse import Warehouse
home = Path(sys.argv[1])
with in_progress.doing(home, "apply", sys.argv[2], "run-in-progress", parse_instant(sys.argv[3], "now")):
    with Warehouse(home).connect():  # a long load holds the file read-write
        print("holding", flush=True)
        sys.stdin.readline()
"""


@contextmanager
def writer_holding(home: Path, day: str) -> Iterator[None]:
    """A child process applying ``day`` holds the warehouse file read-write until the block ends."""
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(home), day, NOW],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "holding\n"
        yield
    finally:
        assert holder.stdin is not None
        holder.stdin.write("\n")
        holder.stdin.close()
        holder.wait(timeout=60)


def test_while_a_writer_holds_the_warehouse_readers_answer_from_the_published_copy(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (home / "replay-assets.json").write_text('{"lock_timeout_seconds": 5}')  # a wait would fail, not hang
    with writer_holding(home, D4):
        before = _tree(home)
        code, out = _cli(capsys, "status", "--home", str(home), "--json")
        document = json.loads(out)
        assert code == 1  # D2 is still missing, read from the copy's evidence
        assert document["source"] == "published copy"
        assert document["in_progress"]["use_case"] == "apply"
        assert document["in_progress"]["partition"] == D4
        assert {(p["partition_key"], p["status"]) for p in document["partitions"]} >= {
            (D1, "CERTIFIED"),
            (D2, "MISSING"),
        }
        code, out = _cli(capsys, "status", "--home", str(home))
        assert f"in progress: apply {D4} since" in out and "published copy" in out
        code, out = _cli(capsys, "export", "current_orders", "--home", str(home), "--format", "jsonl")
        assert code == 0 and sorted(json.loads(line)["order_id"] for line in out.splitlines()) == ["o1", "o2"]
        code, out = _cli(
            capsys, "export", "current_orders", "--as-of", D1, "--home", str(home), "--format", "jsonl"
        )
        assert code == 0 and sorted(json.loads(line)["order_id"] for line in out.splitlines()) == ["o1", "o2"]
        assert main(["export", "raw_receipts", "--home", str(home)]) == 1  # raw input stays in the warehouse
        assert "REPLAY_WAREHOUSE_BUSY" in capsys.readouterr().err
        assert _cli(capsys, "recovery", "inspect", "--home", str(home), "--json")[0] == 0
        assert _tree(home) == before  # the readers wrote nothing
    assert not (home / "in_progress.json").exists()


NO_DAGSTER = """
import sys
from replay_assets.entrypoints.cli import main
codes = [main(["status", "--json", "--home", sys.argv[1]]),
         main(["export", "current_orders", "--home", sys.argv[1]]),
         main(["recovery", "inspect", "--home", sys.argv[1]])]
print(codes, "dagster" in sys.modules, file=sys.stderr)
"""


def test_the_readers_answer_without_importing_dagster(home: Path) -> None:
    """Starting Dagster costs a reader about a second it does not need (0.4 s against 1.2-1.6 s
    for ``status`` on 2 cores): the reading commands never import it."""
    env = {**os.environ, "REPLAY_ASSETS_NOW": NOW}
    child = subprocess.run(
        [sys.executable, "-c", NO_DAGSTER, str(home)], capture_output=True, text=True, env=env
    )
    assert child.returncode == 0, child.stderr[-2000:]
    assert child.stderr.strip().splitlines()[-1] == "[1, 0, 0] False"  # status: D2 is MISSING


def test_during_the_first_load_readers_answer_with_the_empty_state_at_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before anything is certified there is no published copy to fall back to: a reader answers
    with what consumers can see (nothing) and names the load, instead of waiting for it (the
    10M benchmark's probes waited up to 61 s)."""
    (tmp_path / "replay-assets.json").write_text('{"lock_timeout_seconds": 30}')
    with writer_holding(tmp_path, D1):
        assert not (tmp_path / "published.duckdb").exists()
        code, out = _cli(capsys, "status", "--home", str(tmp_path), "--json")
        document = json.loads(out)
        assert code == 0 and document["partitions"] == []
        assert document["source"].startswith("empty state")
        assert document["in_progress"]["partition"] == D1
        code, out = _cli(capsys, "status", "--home", str(tmp_path))
        assert "nothing is published yet" in out and f"in progress: apply {D1}" in out
