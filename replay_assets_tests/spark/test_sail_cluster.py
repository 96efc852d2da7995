"""Sail's local-cluster mode, which the contract suite also runs on (``stores.CLUSTER``): work is
really split between its two workers, and a process whose Sail server stopped before it exits
still exits."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from pyspark.errors import PySparkException

from replay_assets_tests.sail_server import CLUSTER, running, session

pytestmark = pytest.mark.slow  # servers of their own, a child process

ROOT = Path(__file__).resolve().parents[2]
FILES = 12  # more than one worker's slots below, fewer than two workers'
SLOTS = {**CLUSTER, "SAIL_CLUSTER__WORKER_TASK_SLOTS": "8"}


def _merge_into_a_table_of_many_files(remote: str, where: Path) -> list[tuple[int, str]]:
    """A Delta table written in ``FILES`` commits (a file each), then one MERGE into it: Sail plans
    a task per file of the target and launches a region's tasks at once."""
    spark = session(remote)
    try:
        for n in range(FILES):
            rows = spark.createDataFrame([(n, "old")], "k long, v string")
            rows.write.format("delta").mode("append").save(str(where))
        spark.createDataFrame([(0, "new"), (FILES, "new")], "k long, v string").createOrReplaceTempView("src")
        spark.sql(f"CREATE TABLE t USING delta LOCATION '{where}'")
        spark.sql(
            "MERGE INTO t USING src ON t.k = src.k"
            " WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"
        ).collect()
        return sorted((r.k, r.v) for r in spark.sql("SELECT k, v FROM t WHERE v = 'new'").collect())
    finally:
        spark.stop()


def test_a_merge_wider_than_one_worker_runs_on_the_two_workers(tmp_path: Path) -> None:
    """With 8 task slots a worker, a MERGE needing 12 tasks at once cannot run on one worker (Sail
    refuses it, naming the slots) and runs on two: its tasks were split between the workers."""
    alone = {**SLOTS, "SAIL_CLUSTER__WORKER_MAX_COUNT": "1", "SAIL_CLUSTER__WORKER_INITIAL_COUNT": "1"}
    with running(alone) as one:
        with pytest.raises(PySparkException, match=r"requires \d+ worker task slots.* maximum is 8"):
            _merge_into_a_table_of_many_files(one, tmp_path / "one")
    with running(SLOTS) as two:
        assert _merge_into_a_table_of_many_files(two, tmp_path / "two") == [(0, "new"), (FILES, "new")]


CHILD = """
import sys

from replay_assets.storage.spark.connect import spark_store
from replay_assets_tests.sail_server import running

with running() as remote:
    store = spark_store(remote, sys.argv[1], 30.0)
    store.tables.spark.sql("SELECT 1").collect()
print("the server stopped", flush=True)
"""


def test_a_process_whose_sail_server_stopped_first_exits(tmp_path: Path) -> None:
    """The process's cached Spark Connect session outlives the server it talks to (as the tests'
    session server stops before the interpreter exits); the process still exits, at once."""
    script = tmp_path / "child.py"  # a file: pyspark reads a main module without one as a doctest run
    script.write_text(CHILD, encoding="utf-8")
    child = subprocess.run(
        [sys.executable, str(script), str(tmp_path / "delta")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=ROOT,
    )
    assert child.returncode == 0, child.stderr[-2000:]
    assert "the server stopped" in child.stdout
