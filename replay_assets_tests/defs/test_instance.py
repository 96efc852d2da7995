"""The embedded instance (``replay_assets/defs/instance.py``): Dagster's, with an event log that
keeps its SQLite connections. What it must still do as Dagster's does: every process sees every
event, the webserver's watch streams a running run's new events, a wiped log takes new events,
and a long-lived process holds a bounded number of files open. A home created by an earlier
version gets it, unless its ``dagster.yaml`` was edited."""

import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import pytest
from dagster._core.events import DagsterEvent, DagsterEventType, EngineEventData
from dagster._core.events.log import EventLogEntry
from dagster._core.storage.event_log.sqlite.sqlite_event_log import SqliteEventLogStorage

from replay_assets.defs.instance import KEPT_FILES, PooledSqliteEventLogStorage, ReplayInstance
from replay_assets.entrypoints.runner import PROJECT_INSTANCE_CONFIG, instance_for

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "instance"


def _entry(run_id: str, message: str) -> EventLogEntry:
    return EventLogEntry(
        error_info=None,
        level=20,
        user_message=message,
        run_id=run_id,
        timestamp=time.time(),
        step_key=None,
        job_name="job",
        dagster_event=DagsterEvent(
            event_type_value=DagsterEventType.ENGINE_EVENT.value,
            job_name="job",
            event_specific_data=EngineEventData(),
        ),
    )


def _messages(instance: dg.DagsterInstance, run_id: str) -> list[str]:
    return [r.event_log_entry.user_message for r in instance.get_records_for_run(run_id).records]


def test_the_home_instance_and_a_run_worker_s_copy_use_the_pooled_event_log(tmp_path: Path) -> None:
    instance = instance_for(tmp_path / "dagster")
    worker = dg.DagsterInstance.from_ref(instance.get_ref())  # how a launched run rebuilds it
    for each in (instance, worker):
        assert isinstance(each, ReplayInstance)
        assert isinstance(each.event_log_storage, PooledSqliteEventLogStorage)

    @dg.asset
    def one() -> int:
        return 1

    result = dg.materialize([one], instance=worker)
    assert result.success
    reader = dg.DagsterInstance.from_config(str(tmp_path / "dagster"))  # another process's view
    written = _messages(worker, result.run_id)
    assert written and _messages(reader, result.run_id) == written
    assert reader.get_latest_materialization_event(dg.AssetKey("one")) is not None  # the index file
    for each in (instance, worker, reader):
        each.dispose()


def test_check_evaluations_are_stored_without_looking_the_checks_table_up_each_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    instance = instance_for(tmp_path / "dagster")
    storage = instance.event_log_storage
    assert isinstance(storage, PooledSqliteEventLogStorage)
    looked_up = []
    real = SqliteEventLogStorage.has_table

    def counted(self: SqliteEventLogStorage, table_name: str) -> bool:
        looked_up.append(table_name)
        return real(self, table_name)

    monkeypatch.setattr(SqliteEventLogStorage, "has_table", counted)
    keys = [str(n) for n in range(12)]
    partitions = dg.StaticPartitionsDefinition(keys)

    @dg.asset(
        partitions_def=partitions,
        dagster_type=dg.Nothing,
        check_specs=[dg.AssetCheckSpec("positive", asset="part", partitions_def=partitions)],
    )
    def part(context: dg.AssetExecutionContext) -> Iterator[object]:
        for key in context.partition_keys:
            yield dg.AssetMaterialization("part", partition=key)
            yield dg.AssetCheckEvaluation(
                asset_key=dg.AssetKey("part"), check_name="positive", passed=key != "3", partition=key
            )
        yield dg.Output(None, output_name="result")
        yield dg.Output(None, output_name=context.assets_def.get_output_name_for_asset_check_key(check))

    check = dg.AssetCheckKey(dg.AssetKey("part"), "positive")
    whole = {"dagster/asset_partition_range_start": "0", "dagster/asset_partition_range_end": "11"}
    result = dg.materialize([part], instance=instance, tags=whole)
    assert result.success
    stored = [
        r.event_log_entry.dagster_event.asset_check_evaluation_data
        for r in instance.get_records_for_run(
            result.run_id, of_type=DagsterEventType.ASSET_CHECK_EVALUATION
        ).records
    ]
    assert {(e.partition, e.passed) for e in stored if e.partition is not None} == {
        (k, k != "3") for k in keys
    }
    assert looked_up.count("asset_check_executions") <= 1  # not once per evaluation
    instance.dispose()


def test_a_watcher_sees_each_new_event_of_a_run_while_it_is_written(tmp_path: Path) -> None:
    """The webserver streams a run's events by watching its database file: a transaction left in
    the WAL by a connection that stays open would not be seen until the run ended."""
    writer = PooledSqliteEventLogStorage(str(tmp_path))
    watcher = PooledSqliteEventLogStorage(str(tmp_path))
    writer.store_event(_entry("run-1", "first"))
    seen: list[str] = []
    arrived = threading.Event()

    def on_event(entry: EventLogEntry, cursor: str) -> None:
        seen.append(entry.user_message)
        if entry.user_message == "second":
            arrived.set()

    first = watcher.get_records_for_run("run-1")
    watcher.watch("run-1", first.cursor, on_event)
    try:
        writer.store_event(_entry("run-1", "second"))
        assert arrived.wait(timeout=30), f"the watcher saw {seen}"
    finally:
        watcher.end_watch("run-1", on_event)
        watcher.dispose()
        writer.dispose()
    assert seen == ["second"]


def test_a_long_lived_process_keeps_a_bounded_number_of_files_open(tmp_path: Path) -> None:
    storage = PooledSqliteEventLogStorage(str(tmp_path))
    runs = [f"run-{n}" for n in range(KEPT_FILES + 4)]
    for run_id in runs:
        storage.store_event(_entry(run_id, run_id))
    open_files = {
        os.readlink(f"/proc/self/fd/{fd}")
        for fd in os.listdir("/proc/self/fd")
        if os.path.exists(f"/proc/self/fd/{fd}")
    }
    held = {name for name in open_files if name.startswith(str(tmp_path)) and name.endswith(".db")}
    assert len(held) <= KEPT_FILES + 1  # the runs' files and the index
    reader = PooledSqliteEventLogStorage(str(tmp_path))
    assert [
        [r.event_log_entry.user_message for r in reader.get_records_for_run(run_id).records]
        for run_id in runs
    ] == [[run_id] for run_id in runs]
    storage.dispose()
    reader.dispose()


def test_a_wiped_event_log_takes_new_events_in_new_files(tmp_path: Path) -> None:
    storage = PooledSqliteEventLogStorage(str(tmp_path))
    storage.store_event(_entry("run-1", "before"))
    storage.wipe()
    storage.store_event(_entry("run-1", "after"))
    reader = PooledSqliteEventLogStorage(str(tmp_path))
    assert [r.event_log_entry.user_message for r in reader.get_records_for_run("run-1").records] == ["after"]
    storage.dispose()
    reader.dispose()


def test_a_home_created_by_an_earlier_version_gets_the_current_file_unless_it_was_edited(
    tmp_path: Path,
) -> None:
    earlier = (FIXTURES / "dagster-ed35798.yaml").read_bytes()  # the file before this instance
    unchanged, edited = tmp_path / "unchanged", tmp_path / "edited"
    for home, content in ((unchanged, earlier), (edited, earlier + b"# an operator's note\n")):
        home.mkdir()
        (home / "dagster.yaml").write_bytes(content)
    upgraded = instance_for(unchanged)
    assert (unchanged / "dagster.yaml").read_bytes() == PROJECT_INSTANCE_CONFIG.read_bytes()
    assert isinstance(upgraded.event_log_storage, PooledSqliteEventLogStorage)
    kept = instance_for(edited)
    assert (edited / "dagster.yaml").read_bytes() == earlier + b"# an operator's note\n"
    assert not isinstance(kept, ReplayInstance)
    upgraded.dispose()
    kept.dispose()
