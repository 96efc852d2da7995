"""The Spark adapter's transaction over Delta tables (``storage/spark/tables.py``) on a real Sail
server: readers see an operation's writes all at once or not at all, whether it is killed, loses
a race, or is interleaved with another writer; an operation fences once however many workers run
it."""

from __future__ import annotations

import datetime as dt
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from replay_assets.core.errors import ErrorCode, ReplayError
from replay_assets.storage.spark.tables import FENCES, DeltaTables, Writer, latest_version
from replay_assets_tests.sail_server import session

NOW = dt.datetime(2026, 9, 21, 8, 0)
ROW = "k BIGINT, v STRING"


def rows(store: DeltaTables, table: str) -> list[tuple[object, ...]] | None:
    """``table`` as the newest fence shows it to a reader."""
    frame = store.read(table, store.committed())
    return None if frame is None else sorted(tuple(r) for r in frame.collect())


def begin(store: DeltaTables, operation_id: str, *tables: str) -> Writer:
    writer = store.begin(operation_id, tables)
    assert writer is not None, f"{operation_id} has fenced already"
    return writer


def put(store: DeltaTables, operation_id: str, **tables: list[tuple[int, str]]) -> None:
    """One fenced operation appending ``tables``' rows."""
    writer = begin(store, operation_id, *tables)
    for table, new in tables.items():
        writer.append(table, store.spark.createDataFrame(new, ROW))
    writer.fence(NOW)


def test_readers_see_an_operations_tables_only_once_it_fences(spark: SparkSession, tmp_path: Path) -> None:
    store = DeltaTables(spark, str(tmp_path))
    writer = begin(store, "op-1", "a", "b")
    writer.append("a", spark.createDataFrame([(1, "x")], ROW))
    writer.append("b", spark.createDataFrame([(2, "y")], ROW))
    writer.append("a", spark.createDataFrame([(3, "z")], ROW))
    assert sorted(tuple(r) for r in writer.head("a").collect()) == [(1, "x"), (3, "z")]  # its own writes
    assert (rows(store, "a"), rows(store, "b")) == (None, None)
    snapshot = writer.fence(NOW)
    assert snapshot.seq == 1 and snapshot.versions == {"a": 1, "b": 0}
    assert (rows(store, "a"), rows(store, "b")) == ([(1, "x"), (3, "z")], [(2, "y")])
    assert store.committed_operation("op-1") and not store.committed_operation("op-2")
    assert store.begin("op-1", ("a",)) is None  # a retry of a fenced operation writes nothing


def test_statements_and_overwrites_count_as_the_writers_commits(spark: SparkSession, tmp_path: Path) -> None:
    store = DeltaTables(spark, str(tmp_path))
    put(store, "op-1", state=[(1, "a"), (2, "b")])
    writer = begin(store, "op-2", "state", "totals")
    spark.createDataFrame([(1, "0"), (2, "b2"), (3, "c")], ROW).createOrReplaceTempView("changes")
    writer.statement(  # a guarded upsert: key 1's change sorts below its value and is ignored
        "state",
        "MERGE INTO {target} t USING changes c ON t.k = c.k "
        "WHEN MATCHED AND c.v > t.v THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *",
    )
    writer.overwrite("totals", writer.head("state").selectExpr("count(*) AS k", "'rows' AS v"))
    writer.overwrite("totals", writer.head("state").selectExpr("sum(k) AS k", "'keys' AS v"))
    assert writer.fence(NOW).versions == {"state": 1, "totals": 1}
    assert rows(store, "state") == [(1, "a"), (2, "b2"), (3, "c")]
    assert rows(store, "totals") == [(6, "keys")]


def test_an_append_counts_its_rows_and_only_its_own_commit(spark: SparkSession, tmp_path: Path) -> None:
    store = DeltaTables(spark, str(tmp_path))
    put(store, "op-1", a=[(1, "x")])
    writer = begin(store, "op-2", "a", "b")
    three = spark.createDataFrame([(2, "y"), (3, "z"), (4, "w")], ROW)
    assert writer.appended("a", three) == 3
    assert writer.appended("a", three.where("k > 9")) == 0  # Sail commits nothing: none counted
    assert writer.appended("b", spark.createDataFrame([(5, "v")], ROW)) == 1  # a new table
    assert writer.fence(NOW).versions == {"a": 1, "b": 0}
    assert rows(store, "a") == [(1, "x"), (2, "y"), (3, "z"), (4, "w")]
    # an empty append after another writer's commit counts nothing: the fence still refuses
    racing = begin(store, "op-3", "a")
    intruder = store.begin("op-4", ("a",))
    assert intruder is not None
    intruder.append("a", spark.createDataFrame([(7, "i")], ROW))
    assert racing.appended("a", three.where("k > 9")) == 0
    with pytest.raises(ReplayError) as refused:
        racing.fence(NOW)
    assert refused.value.code is ErrorCode.WAREHOUSE_BUSY


def test_an_unfenced_operation_is_never_read_and_the_next_writer_removes_it(
    spark: SparkSession, tmp_path: Path
) -> None:
    store = DeltaTables(spark, str(tmp_path))
    put(store, "op-1", a=[(1, "x")])
    abandoned = begin(store, "op-lost", "a", "b")
    abandoned.append("a", spark.createDataFrame([(9, "lost")], ROW))
    abandoned.append("b", spark.createDataFrame([(9, "lost")], ROW))  # a table no fence names yet
    assert (rows(store, "a"), rows(store, "b")) == ([(1, "x")], None)
    writer = begin(store, "op-2", "a", "b")
    assert sorted(tuple(r) for r in writer.head("a").collect()) == [(1, "x")]
    assert writer.head("b").collect() == []
    writer.append("b", spark.createDataFrame([(2, "y")], ROW))
    writer.fence(NOW)
    assert (rows(store, "a"), rows(store, "b")) == ([(1, "x")], [(2, "y")])


def test_a_table_already_back_to_its_fenced_content_is_not_rolled_back_again(
    spark: SparkSession, tmp_path: Path
) -> None:
    """An abandoned write to a table no fence names, rolled back by a writer that then fenced
    nothing: the table is empty at a version no fence names. Sail commits nothing for an empty
    overwrite of an empty table, so a second rollback would not be the commit the next writer
    counts, and that writer was refused as if another had written."""
    store = DeltaTables(spark, str(tmp_path))
    abandoned = begin(store, "op-lost", "a")
    abandoned.append("a", spark.createDataFrame([(9, "lost")], ROW))
    begin(store, "op-reader", "a")  # rolls "a" back to empty, fences nothing
    writer = begin(store, "op-2", "a", "b")
    assert writer.head("a").collect() == []
    writer.append("b", spark.createDataFrame([(2, "y")], ROW))
    writer.fence(NOW)
    assert (rows(store, "a"), rows(store, "b")) == (None, [(2, "y")])
    again = begin(store, "op-3", "a")
    again.append("a", spark.createDataFrame([(3, "z")], ROW))
    again.fence(NOW)
    assert rows(store, "a") == [(3, "z")]


def test_writers_interleaved_on_one_table_both_fail_to_fence(spark: SparkSession, tmp_path: Path) -> None:
    store = DeltaTables(spark, str(tmp_path))
    put(store, "op-1", a=[(1, "x")])
    first, second = begin(store, "op-2", "a"), begin(store, "op-3", "a")
    first.append("a", spark.createDataFrame([(2, "first")], ROW))
    second.append("a", spark.createDataFrame([(3, "second")], ROW))
    for writer in (first, second):
        with pytest.raises(ReplayError) as refused:
            writer.fence(NOW)
        assert refused.value.code is ErrorCode.WAREHOUSE_BUSY
    assert rows(store, "a") == [(1, "x")]
    put(store, "op-2", a=[(2, "first")])  # run again, alone: it fences
    assert rows(store, "a") == [(1, "x"), (2, "first")]


def test_a_writer_that_read_another_writers_unfenced_commit_is_refused(
    spark: SparkSession, tmp_path: Path
) -> None:
    store = DeltaTables(spark, str(tmp_path))
    put(store, "op-1", a=[(1, "x")])
    reader = begin(store, "op-2", "a", "b")
    other = begin(store, "op-3", "a")
    other.append("a", spark.createDataFrame([(9, "unfenced")], ROW))
    counted = reader.head("a").count()  # sees the other writer's row: it must not fence on it
    reader.append("b", spark.createDataFrame([(counted, "rows of a")], ROW))
    with pytest.raises(ReplayError, match="another writer committed to a"):
        reader.fence(NOW)
    assert (rows(store, "a"), rows(store, "b")) == ([(1, "x")], None)


class Interleaved(DeltaTables):
    """The engine as it is, with another writer acting once at one instant of this writer's
    ``begin``: right after its rollback (``at="rollback"``) or right after it asked whether the
    operation has fenced (``at="check"``). The windows a race would otherwise hit by chance."""

    def __init__(self, spark: SparkSession, root: str, at: str, act: Callable[[], object]) -> None:
        super().__init__(spark, root)
        self.at, self.act = at, act

    def _roll_back(self, table: str, fenced: int | None) -> None:
        super()._roll_back(table, fenced)
        self._now("rollback")

    def committed_operation(self, operation_id: str) -> bool:
        found = super().committed_operation(operation_id)
        self._now("check")
        return found

    def _now(self, instant: str) -> None:
        if instant == self.at and self.act is not None:
            act, self.act = self.act, None
            act()


def test_a_commit_right_after_a_rollback_is_not_taken_for_the_writers_base(
    spark: SparkSession, tmp_path: Path
) -> None:
    store = DeltaTables(spark, str(tmp_path))
    put(store, "op-1", a=[(1, "x")])
    other = begin(store, "op-other", "a")
    other.append("a", spark.createDataFrame([(7, "theirs")], ROW))  # unfenced: the next begin rolls back
    theirs = spark.createDataFrame([(8, "theirs")], ROW)
    writer = begin(
        Interleaved(spark, str(tmp_path), "rollback", lambda: other.append("a", theirs)), "op-2", "a"
    )
    writer.append("a", spark.createDataFrame([(2, "mine")], ROW))
    with pytest.raises(ReplayError, match="another writer committed to a"):
        writer.fence(NOW)
    assert rows(store, "a") == [(1, "x")]


def test_an_operation_fenced_after_a_writer_asked_is_not_fenced_again(
    spark: SparkSession, tmp_path: Path
) -> None:
    store = DeltaTables(spark, str(tmp_path))
    put(store, "op-1", a=[(1, "x")])
    other = begin(store, "op-add", "b")
    other.append("b", spark.createDataFrame([(1, "once")], ROW))
    writer = begin(Interleaved(spark, str(tmp_path), "check", lambda: other.fence(NOW)), "op-add", "b")
    writer.append("b", spark.createDataFrame([(1, "once")], ROW))
    with pytest.raises(ReplayError, match="another writer fenced first"):
        writer.fence(NOW)  # its snapshot predates the other fence: it cannot take a later number
    assert rows(store, "b") == [(1, "once")]
    fences = spark.sql(f"SELECT operation_id FROM {store.ref(FENCES)}").collect()
    assert sorted(r["operation_id"] for r in fences) == ["op-1", "op-add"]


def test_the_fences_table_is_not_a_writers_table(spark: SparkSession, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="written by fences only"):
        DeltaTables(spark, str(tmp_path)).begin("op-1", (FENCES,))


def test_of_two_writers_on_other_tables_the_second_to_fence_loses(
    spark: SparkSession, tmp_path: Path
) -> None:
    store = DeltaTables(spark, str(tmp_path))
    first, second = begin(store, "op-1", "a"), begin(store, "op-2", "b")
    first.append("a", spark.createDataFrame([(1, "x")], ROW))
    second.append("b", spark.createDataFrame([(2, "y")], ROW))
    first.fence(NOW)
    with pytest.raises(ReplayError, match="another writer fenced first"):
        second.fence(NOW)  # its base is no longer the newest fence
    assert (rows(store, "a"), rows(store, "b")) == ([(1, "x")], None)
    assert not store.committed_operation("op-2")


CHILD = """
import datetime as dt, os, signal, sys
from pyspark.sql import SparkSession
from replay_assets.storage.spark.tables import DeltaTables
remote, root, kill_at = sys.argv[1:4]
store = DeltaTables(SparkSession.builder.remote(remote).create(), root)
writer = store.begin("op-child", ("a", "b"))
writer.append("a", store.spark.createDataFrame([(7, "child")], "k BIGINT, v STRING"))
if kill_at == "between_tables":
    os.kill(os.getpid(), signal.SIGKILL)
writer.append("b", store.spark.createDataFrame([(7, "child")], "k BIGINT, v STRING"))
if kill_at == "before_fence":
    os.kill(os.getpid(), signal.SIGKILL)
writer.fence(dt.datetime(2026, 9, 21, 8, 0))
if kill_at == "after_fence":
    os.kill(os.getpid(), signal.SIGKILL)
"""


@pytest.mark.parametrize("kill_at", ["between_tables", "before_fence", "after_fence"])
def test_a_killed_operation_is_seen_whole_or_not_at_all(
    spark: SparkSession, sail: str, tmp_path: Path, kill_at: str
) -> None:
    store = DeltaTables(spark, str(tmp_path / "tables"))
    put(store, "op-1", a=[(1, "x")], b=[(1, "x")])
    script = tmp_path / "child.py"  # a file: pyspark's Spark Connect check exits under `python -c`
    script.write_text(CHILD)
    root = tmp_path / "tables"
    child = subprocess.run([sys.executable, str(script), sail, str(root), kill_at], check=False, timeout=120)
    assert child.returncode == -signal.SIGKILL
    fenced = kill_at == "after_fence"
    expected = [(1, "x"), (7, "child")] if fenced else [(1, "x")]
    assert (rows(store, "a"), rows(store, "b")) == (expected, expected)
    assert store.committed_operation("op-child") is fenced
    put(store, "op-2", a=[(2, "y")], b=[(2, "y")])  # the next writer, over whatever was left
    assert (rows(store, "a"), rows(store, "b")) == (sorted([*expected, (2, "y")]),) * 2


def test_two_workers_running_one_operation_make_one_mutation(sail: str, tmp_path: Path) -> None:
    """Both workers run the same operation until it has fenced: each retry first asks whether it
    has, so the count is added once, whichever worker wins and however often one is refused."""
    root = str(tmp_path)
    setup = session(sail)
    put(DeltaTables(setup, root), "op-0", counter=[(0, "start")])
    outcomes: list[str] = []
    start = threading.Barrier(2)  # both workers begin on the same fence
    failures: list[BaseException] = []

    def worker() -> None:
        spark = session(sail)
        store = DeltaTables(spark, root)
        try:
            start.wait(timeout=60)
            for _ in range(20):
                try:  # any step may lose to the other worker's commit: then run it again
                    writer = store.begin("op-add", ("counter",))
                    if writer is None:
                        outcomes.append("found fenced")
                        return
                    top = max(r["k"] for r in writer.head("counter").collect())
                    writer.append("counter", spark.createDataFrame([(top + 1, "added")], ROW))
                    writer.fence(NOW)
                    outcomes.append("fenced")
                    return
                except ReplayError as err:
                    assert err.code is ErrorCode.WAREHOUSE_BUSY
        except BaseException as err:  # surfaced below: a thread's assertion is otherwise lost
            failures.append(err)
        finally:
            spark.stop()

    threads = [threading.Thread(target=worker) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert failures == []
    assert sorted(outcomes) == ["fenced", "found fenced"]
    store = DeltaTables(setup, root)
    assert rows(store, "counter") == [(0, "start"), (1, "added")]
    fences = setup.sql(f"SELECT operation_id FROM {store.ref(FENCES)}").collect()
    assert sorted(r["operation_id"] for r in fences) == ["op-0", "op-add"]
    setup.stop()


def test_a_fenced_version_stays_readable_however_far_writers_get_ahead(
    spark: SparkSession, tmp_path: Path
) -> None:
    """Past ten commits Delta would write a checkpoint, and Sail 0.7 cannot read a version older
    than one: the adapter's tables are made without them."""
    store = DeltaTables(spark, str(tmp_path))
    for k in range(5):  # fenced at version 4: Sail reads versions 0 and 1 past a checkpoint
        put(store, f"op-{k}", a=[(k, "x")])
    ahead = begin(store, "op-ahead", "a")
    for k in range(5, 17):
        ahead.append("a", spark.createDataFrame([(k, "ahead")], ROW))
    assert latest_version(str(tmp_path / "a")) == 16
    assert rows(store, "a") == [(k, "x") for k in range(5)]
    assert not [f for f in os.listdir(tmp_path / "a" / "_delta_log") if "checkpoint" in f]


def test_the_newest_version_is_read_from_the_log(spark: SparkSession, tmp_path: Path) -> None:
    assert latest_version(str(tmp_path / "t")) is None
    spark.createDataFrame([(1, "x")], ROW).write.format("delta").save(str(tmp_path / "t"))
    spark.createDataFrame([(2, "y")], ROW).write.format("delta").mode("append").save(str(tmp_path / "t"))
    assert latest_version(str(tmp_path / "t")) == 1
    assert os.path.exists(tmp_path / "t" / "_delta_log" / f"{1:020d}.json")
