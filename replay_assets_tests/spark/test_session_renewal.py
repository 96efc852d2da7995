"""A session the server has dropped (idle past its timeout, or released) is replaced when the
next unit of a store that can renew begins; a store that cannot renew fails on it. The server
drops the session here as it would at its timeout: another client releases it by its id."""

import datetime as dt
from pathlib import Path

import pytest
from pyspark.errors.exceptions.connect import SparkConnectException
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.connect.session import SparkSession as ConnectSession

from replay_assets.storage.spark.store import IDLE_CHECK, SparkStore
from replay_assets_tests.sail_server import session

T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> dt.datetime:
        return self.now


def _drop(remote: str, spark: SparkSession) -> None:
    """Release ``spark``'s session on the server, from another client."""
    SparkSession.builder.remote(f"{remote}/;session_id={spark.session_id}").create().stop()


def _store(remote: str, root: Path, clock: Clock, renew: bool) -> SparkStore:
    store = SparkStore(
        session(remote), str(root), clock=clock, renew=(lambda: session(remote)) if renew else None
    )
    with store.transaction() as writer:
        writer.evidence.save_sensor_cursor("s", "c")
    return store


def test_a_dropped_session_is_replaced_by_the_next_unit_and_nothing_is_lost(
    sail: str, tmp_path: Path
) -> None:
    clock = Clock()
    store = _store(sail, tmp_path / "warehouse", clock, renew=True)
    dropped = store.tables.spark
    ConnectSession._active_session.session = dropped  # as a thread's first session is
    _drop(sail, dropped)
    clock.now += IDLE_CHECK
    try:
        with store.transaction() as writer:
            assert writer.evidence.sensor_cursor("s") == "c"
            writer.evidence.save_sensor_cursor("s", "d")
            # a datetime literal: pyspark types it by asking the thread's active session
            [row] = writer.ops.spark.range(1).select(F.lit(T0).alias("t")).collect()
            assert row["t"].astimezone(dt.UTC) == T0
        with store.read() as reader:
            assert reader.evidence.sensor_cursor("s") == "d"
        assert store.tables.spark is not dropped and dropped.is_stopped
    finally:
        store.tables.spark.stop()


def test_without_renewal_a_dropped_session_fails_the_unit(sail: str, tmp_path: Path) -> None:
    clock = Clock()
    store = _store(sail, tmp_path / "warehouse", clock, renew=False)
    _drop(sail, store.tables.spark)
    clock.now += IDLE_CHECK
    try:
        with pytest.raises(SparkConnectException, match="is not running"), store.read() as reader:
            reader.evidence.sensor_cursor("s")
    finally:
        store.tables.spark.stop()  # a dropped session left active would fail the thread's datetimes
