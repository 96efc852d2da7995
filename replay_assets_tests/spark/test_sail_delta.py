"""What Sail 0.7.2 does with Delta tables, on a real local Sail server: the facts the Spark
adapter's fence and journal are designed on (docs/deploy.md, "Sail 0.7.2 and Delta"), and the
gaps it designs around. A test that starts failing here means Sail changed: revisit the design
note before anything else."""

import json
import threading
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from pyspark.errors import PySparkException
from pyspark.sql import SparkSession

from replay_assets_tests.sail_server import session

ROW = "k INT, v STRING, version INT"


def _versions(table: Path) -> int:
    """Commits in the table's Delta log."""
    return len(list((table / "_delta_log").glob("*.json")))


def _log_actions(table: Path) -> list[dict[str, object]]:
    return [json.loads(line) for f in sorted((table / "_delta_log").glob("*.json")) for line in f.open()]


def _rows(spark: SparkSession, table: Path) -> list[tuple[object, ...]]:
    return sorted(tuple(r) for r in spark.read.format("delta").load(str(table)).collect())


def test_a_version_guarded_merge_applies_newer_and_ignores_stale_in_one_commit(
    spark: SparkSession, tmp_path: Path
) -> None:
    table = tmp_path / "state"
    spark.createDataFrame([(1, "a", 2), (2, "b", 2)], ROW).write.format("delta").save(str(table))
    # key 1: a stale replay (version 1); key 2: a newer version; key 3: new
    spark.createDataFrame([(1, "stale", 1), (2, "new", 3), (3, "c", 1)], ROW).createOrReplaceTempView(
        "changes"
    )
    spark.sql(
        f"""MERGE INTO delta.`{table}` t USING changes c ON t.k = c.k
        WHEN MATCHED AND c.version > t.version THEN UPDATE SET *
        WHEN NOT MATCHED THEN INSERT *"""
    ).collect()
    assert _rows(spark, table) == [(1, "a", 2), (2, "new", 3), (3, "c", 1)]
    assert _versions(table) == 2


def test_a_failed_merge_leaves_the_table_at_its_version(spark: SparkSession, tmp_path: Path) -> None:
    table = tmp_path / "state"
    spark.createDataFrame([(1, "a", 1)], ROW).write.format("delta").save(str(table))
    spark.createDataFrame([(1, "x", 2), (1, "y", 3)], ROW).createOrReplaceTempView("twice")
    with pytest.raises(PySparkException, match="MERGE_CARDINALITY_VIOLATION"):
        spark.sql(
            f"MERGE INTO delta.`{table}` t USING twice c ON t.k = c.k WHEN MATCHED THEN UPDATE SET *"
        ).collect()
    assert _rows(spark, table) == [(1, "a", 1)] and _versions(table) == 1


def test_idempotent_write_ids_are_ignored_so_the_fence_cannot_use_them(
    spark: SparkSession, tmp_path: Path
) -> None:
    table = tmp_path / "target"
    frame = spark.createDataFrame([(1, "a", 1)], ROW)
    for _ in range(2):
        frame.write.format("delta").mode("append").option("txnAppId", "op-1").option("txnVersion", "1").save(
            str(table)
        )
    assert len(_rows(spark, table)) == 2  # Delta would have skipped the second write
    assert not [a for a in _log_actions(table) if "txn" in a]


@dataclass
class Claims:
    """What the writers of one journal key saw: rows each inserted, who lost the commit, and
    any other error (which fails the test rather than only its thread)."""

    inserted: list[int] = field(default_factory=list)
    lost: list[int] = field(default_factory=list)
    other: list[BaseException] = field(default_factory=list)


def _claim(sail: str, journal: Path, key: str, worker: int, barrier: threading.Barrier, seen: Claims) -> None:
    s = session(sail)
    try:
        s.createDataFrame([(key, worker)], "op STRING, worker INT").createOrReplaceTempView("claim")
        barrier.wait()
        [row] = s.sql(
            f"""MERGE INTO delta.`{journal}` j USING claim c ON j.op = c.op
            WHEN NOT MATCHED THEN INSERT *"""
        ).collect()
        seen.inserted.append(row[0])
    except PySparkException:
        seen.lost.append(worker)  # the other writer committed first: re-read and see its row
    except BaseException as error:
        seen.other.append(error)
    finally:
        s.stop()


def test_concurrent_merges_of_one_journal_key_commit_it_once(
    spark: SparkSession, sail: str, tmp_path: Path
) -> None:
    journal = tmp_path / "journal"
    spark.createDataFrame([("seed", 0)], "op STRING, worker INT").write.format("delta").save(str(journal))
    for trial in range(3):
        key, barrier, seen = f"op-{trial}", threading.Barrier(2), Claims()
        threads = [
            threading.Thread(target=_claim, args=(sail, journal, key, w, barrier, seen)) for w in (1, 2)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert seen.other == []
        rows = spark.read.format("delta").load(str(journal)).where(f"op = '{key}'").count()
        assert rows == 1 and sum(seen.inserted) == 1, (trial, seen)


def test_time_travel_returns_a_table_to_a_version_and_restore_does_not_parse(
    spark: SparkSession, tmp_path: Path
) -> None:
    table = tmp_path / "state"
    spark.createDataFrame([(1, "a", 1)], ROW).write.format("delta").save(str(table))
    spark.createDataFrame([(2, "uncommitted", 1)], ROW).write.format("delta").mode("append").save(str(table))
    spark.sql(f"CREATE TABLE state USING delta LOCATION '{table}'").collect()
    with pytest.raises(PySparkException, match="found RESTORE"):  # a parse error, not a failed restore
        spark.sql("RESTORE TABLE state TO VERSION AS OF 0").collect()
    spark.sql("INSERT OVERWRITE state SELECT * FROM state VERSION AS OF 0").collect()
    assert _rows(spark, table) == [(1, "a", 1)]


def test_an_empty_overwrite_of_an_empty_table_commits_nothing(spark: SparkSession, tmp_path: Path) -> None:
    """A rollback of a table that is empty already is no commit: ``begin`` must not count it as
    one (``tables.py``, ``_both_empty``)."""
    table = tmp_path / "t"
    spark.createDataFrame([(1, "a", 1)], ROW).write.format("delta").save(str(table))
    empty = spark.read.format("delta").load(str(table)).where("false")
    empty.write.format("delta").mode("overwrite").save(str(table))
    assert _versions(table) == 2
    spark.read.format("delta").load(str(table)).where("false").write.format("delta").mode("overwrite").save(
        str(table)
    )
    assert _versions(table) == 2 and _rows(spark, table) == []


def test_a_merge_or_append_that_changes_nothing_commits_nothing(spark: SparkSession, tmp_path: Path) -> None:
    """A writer counts its commits to fence: a ``MERGE`` matching no row and an empty append are
    no commit on Sail, so the Spark unit runs neither (``unit.py``, ``merge_frame``)."""
    table = tmp_path / "t"
    spark.createDataFrame([(1, "a", 1)], ROW).write.format("delta").save(str(table))
    spark.createDataFrame([(9, "z", 1)], ROW).createOrReplaceTempView("nothing_matches")
    spark.sql(
        f"MERGE INTO delta.`{table}` t USING nothing_matches s ON t.k = s.k WHEN MATCHED THEN DELETE"
    ).collect()
    spark.createDataFrame([], ROW).write.format("delta").mode("append").save(str(table))
    assert _versions(table) == 1
    spark.createDataFrame([(1, "a", 1)], ROW).createOrReplaceTempView("the_same_row")
    spark.sql(
        f"MERGE INTO delta.`{table}` t USING the_same_row s ON t.k = s.k "
        "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"
    ).collect()
    assert _versions(table) == 2  # an upsert that rewrites a row unchanged is a commit
