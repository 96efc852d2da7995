"""The contract of the DuckDB connection ports (``storage/db/connection_ports.py``), run against
every adapter.

Today one adapter exists (DuckDB); a second one (Spark Connect + Delta) is proven by adding it to
``replay_assets_tests/adapters.py``. Real files in tmp_path; another process is a real child
interpreter.
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import threading
from pathlib import Path

import duckdb
import pytest

from replay_assets.core.errors import ErrorCode, ReplayError
from replay_assets.storage.db.connection_ports import DuckDBReading as ReaderPort
from replay_assets.storage.db.connection_ports import DuckDBWriting as WriterPort
from replay_assets.storage.db.migrations import MIGRATIONS
from replay_assets.storage.db.warehouse import one
from replay_assets_tests.adapters import ADAPTERS, Ports


@pytest.fixture(params=sorted(ADAPTERS))
def ports(request: pytest.FixtureRequest, tmp_path: Path) -> Ports:
    return ADAPTERS[request.param](tmp_path, 5.0)


def _note(writer: WriterPort, value: str) -> None:
    with writer.transaction() as con:
        con.execute("INSERT INTO sensor_cursors (name, cursor) VALUES (?, ?)", [value, value])


def _notes(reader: ReaderPort) -> list[str]:
    with reader.read() as con:
        return [str(r[0]) for r in con.execute("SELECT cursor FROM sensor_cursors ORDER BY 1").fetchall()]


def _files(home: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(home.iterdir()) if p.is_file()}


def test_a_reader_of_an_empty_home_sees_an_empty_warehouse_and_creates_nothing(
    ports: Ports, tmp_path: Path
) -> None:
    _, reader = ports
    with reader.read() as con:
        assert one(con, "SELECT count(*) FROM current_orders") == (0,)
        assert one(con, "SELECT max(version) FROM schema_migrations") == (MIGRATIONS[-1][0],)
    assert list(tmp_path.iterdir()) == []


def test_a_reader_sees_what_was_committed_and_nothing_of_a_rolled_back_transaction(ports: Ports) -> None:
    writer, reader = ports
    _note(writer, "committed")
    with pytest.raises(RuntimeError), writer.transaction() as con:
        con.execute("INSERT INTO sensor_cursors (name, cursor) VALUES (?, ?)", ["other", "rolled back"])
        raise RuntimeError("the use case failed after writing")
    assert _notes(reader) == ["committed"]


def test_a_reader_never_writes(ports: Ports, tmp_path: Path) -> None:
    writer, reader = ports
    _note(writer, "before")
    before = _files(tmp_path)
    with reader.read() as con:
        with pytest.raises(Exception, match="read-only"):
            con.execute("INSERT INTO sensor_cursors (name, cursor) VALUES (?, ?)", ["x", "y"])
    assert _notes(reader) == ["before"]
    assert _files(tmp_path) == before


def test_a_reader_never_takes_the_writer_lock(ports: Ports, tmp_path: Path) -> None:
    """The writer lock held (a writer between its connections, or waiting for one) does not
    make a reader wait: it reads at once, even with a zero timeout."""
    writer, reader = ports
    _note(writer, "v1")
    fd = os.open(tmp_path / "warehouse.lock", os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        with reader.read(timeout=0) as con:
            assert one(con, "SELECT cursor FROM sensor_cursors") == ("v1",)
        with pytest.raises(ReplayError) as busy:
            with writer.connect(timeout=0):
                pass
        assert busy.value.code is ErrorCode.WAREHOUSE_BUSY
    finally:
        os.close(fd)


def test_a_reader_sees_a_killed_writers_commit_without_touching_the_file(
    ports: Ports, tmp_path: Path
) -> None:
    """A writer killed after its commit, before any checkpoint: the commit is in the WAL only.
    The reader sees it, and leaves the WAL for the next writer to checkpoint."""
    writer, reader = ports
    _note(writer, "checkpointed")
    child = (
        "import os, sys\n"
        "from replay_assets.storage.db.warehouse import Warehouse\n"
        "with Warehouse(sys.argv[1]).connect() as con:\n"
        "    con.execute(\"SET checkpoint_threshold = '1GB'\")\n"
        "    con.execute(\"UPDATE sensor_cursors SET cursor = 'in the wal'\")\n"  # committed
        "    os._exit(0)\n"  # killed before close: no checkpoint
    )
    subprocess.run([sys.executable, "-c", child, str(tmp_path)], check=True)
    assert (tmp_path / "warehouse.duckdb.wal").exists()  # the commit is in the WAL only
    before = _files(tmp_path)
    assert _notes(reader) == ["in the wal"]
    assert _files(tmp_path) == before


def test_a_writer_and_a_reader_in_two_processes_wait_for_each_other_as_busy_never_as_damage(
    ports: Ports, tmp_path: Path
) -> None:
    writer, reader = ports
    _note(writer, "v1")
    child = (
        "import sys\n"
        "from replay_assets.storage.db.warehouse import WarehouseReader\n"
        "with WarehouseReader(sys.argv[1]).read() as con:\n"
        "    print('reading', flush=True)\n"
        "    sys.stdin.readline()\n"
    )
    holder = subprocess.Popen(
        [sys.executable, "-c", child, str(tmp_path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "reading\n"
        with pytest.raises(ReplayError) as busy:
            with writer.connect(timeout=0):
                pass
        assert busy.value.code is ErrorCode.WAREHOUSE_BUSY
        with reader.read(timeout=0) as con:  # readers share the file
            assert one(con, "SELECT cursor FROM sensor_cursors") == ("v1",)
    finally:
        assert holder.stdin is not None
        holder.stdin.write("\n")
        holder.stdin.close()
        holder.wait()
    _note(writer, "v2")  # the reader gone, the writer proceeds
    assert _notes(reader) == ["v1", "v2"]


def test_a_reader_refuses_an_outdated_warehouse_rather_than_migrating_it(
    ports: Ports, tmp_path: Path
) -> None:
    writer, reader = ports
    _note(writer, "v1")
    with writer.transaction() as con:  # as an older release left it
        con.execute("DELETE FROM schema_migrations WHERE version = ?", [MIGRATIONS[-1][0]])
    before = _files(tmp_path)
    with pytest.raises(ReplayError) as outdated:
        with reader.read():
            pass
    assert outdated.value.code is ErrorCode.WAREHOUSE_OUTDATED
    assert _files(tmp_path) == before


def test_a_reader_refuses_a_duckdb_file_no_release_migrated(ports: Ports, tmp_path: Path) -> None:
    _writer, reader = ports
    duckdb.connect(str(tmp_path / "warehouse.duckdb")).close()  # a DuckDB file without our tables
    with pytest.raises(ReplayError) as outdated:
        with reader.read():
            pass
    assert outdated.value.code is ErrorCode.WAREHOUSE_OUTDATED
    assert "schema version 0" in str(outdated.value)


HOLDER = """
import sys, time
from pathlib import Path
from replay_assets.storage.db.warehouse import Warehouse
w = Warehouse(Path(sys.argv[1]), 5.0)
with w.hold():
    with w.transaction() as con:
        con.execute("INSERT INTO sensor_cursors (name, cursor) VALUES ('child', 'held')")
    print("holding", flush=True)
    sys.stdin.readline()
"""


def test_a_hold_keeps_one_connection_and_the_lock_and_each_transaction_commits_on_its_own(
    ports: Ports, tmp_path: Path
) -> None:
    writer, reader = ports
    with writer.hold():
        with writer.connect() as first, writer.connect() as second:
            assert first is second  # one open connection for the body
        _note(writer, "v1")
        with pytest.raises(RuntimeError), writer.transaction() as con:
            con.execute("INSERT INTO sensor_cursors (name, cursor) VALUES ('x', 'x')")
            raise RuntimeError("rolled back")
        with writer.hold(), writer.transaction() as con:  # re-entrant: the same hold
            con.execute("INSERT INTO sensor_cursors (name, cursor) VALUES ('v2', 'v2')")
        assert _notes(reader) == ["v1", "v2"]  # this process reads through its own connection
        fd = os.open(tmp_path / "warehouse.lock", os.O_RDWR)  # the lock stays taken between them
        try:
            with pytest.raises(BlockingIOError):
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        finally:
            os.close(fd)
    assert _notes(reader) == ["v1", "v2"]  # committed, and the hold is gone: a fresh reader sees it
    with writer.connect(timeout=0):
        pass


def test_another_process_waits_for_a_hold_and_a_killed_holder_loses_nothing_it_committed(
    ports: Ports, tmp_path: Path
) -> None:
    writer, reader = ports
    _note(writer, "v1")
    child = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(tmp_path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "holding"
        with pytest.raises(ReplayError) as busy:
            with writer.connect(timeout=0.2):
                pass
        assert busy.value.code is ErrorCode.WAREHOUSE_BUSY
    finally:
        child.kill()
        child.wait()
    assert _notes(reader) == ["held", "v1"]


def test_a_released_hold_lets_another_process_in_and_is_taken_again(ports: Ports, tmp_path: Path) -> None:
    writer, reader = ports
    _note(writer, "v1")
    with writer.hold():
        with writer.released():
            fd = os.open(tmp_path / "warehouse.lock", os.O_RDWR)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # free while released
            finally:
                os.close(fd)
            _note(writer, "v2")  # a transaction of its own, under the lock for its duration
        with writer.connect() as first, writer.connect() as second:
            assert first is second  # held again
    assert _notes(reader) == ["v1", "v2"]


def test_a_hold_is_its_threads_own(ports: Ports) -> None:
    """Another thread of the process waits for the lock like any other connection; it never
    gets the holding thread's connection (DuckDB connections are not shared across threads)."""
    writer, _ = ports
    outcome: list[object] = []

    def other() -> None:
        try:
            with writer.connect(timeout=0.2):
                outcome.append("connected")
        except ReplayError as busy:
            outcome.append(busy.code)

    with writer.hold():
        thread = threading.Thread(target=other)
        thread.start()
        thread.join()
    assert outcome == [ErrorCode.WAREHOUSE_BUSY]
