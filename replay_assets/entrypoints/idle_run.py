"""``replay-assets run`` when there is nothing to do, answered without loading Dagster.

The full path (``runner.py``) starts by opening the home's Dagster instance to refuse a running
daemon and to mark failed the runs a killed process left STARTED; importing Dagster and opening
its instance are most of a no-op's time. This module proves the same from the instance's files
instead: after every full ``run`` on the embedded (SQLite) instance, ``runner.settle_instance``
checks through Dagster that no run is STARTED or STARTING and no daemon's heartbeat is fresh,
and records the instance's files (name, size, modification time, inode) in
``$HOME/instance_settled.json``. Every later write to the instance (a run, a heartbeat, a tick)
changes one of them, so a ``run`` that finds them as recorded knows Dagster holds nothing to
recover; together with ``usecases/idle.py`` (the journal, retention, the sensors' decisions) it
prints today's no-op report and exits. Anything else, or any doubt (another instance file, a
PostgreSQL instance, the Spark warehouse), takes the full path.

The record also holds the warehouse's and the published copy's files as they were after the
``run``'s refresh of the copy, when the warehouse did not change during it: an idle ``run`` that
finds them so leaves the copy as it is (a refresh would write the same rows again), and
refreshes it otherwise."""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from replay_assets.core.config import Settings
from replay_assets.core.errors import ErrorCode, ReplayError
from replay_assets.storage.home.home_files import open_lock, read_own_file, write_own_file
from replay_assets.usecases.context import Pipeline
from replay_assets.usecases.idle import pending_work

PROJECT_INSTANCE_CONFIG = resources.files("replay_assets") / "dagster.yaml"  # shipped in the package
SETTLED_FILE = "instance_settled.json"
NOT_STATE = frozenset({"storage"})  # the instance's compute logs and artifacts, not its storage
WAREHOUSE_FILES = ("warehouse.duckdb", "warehouse.duckdb.wal")
WAREHOUSE_HEADER_BYTES = 3 * 4096  # DuckDB's file header and its two database headers
PUBLISHED, PUBLISHED_DB = "published", "published.duckdb"


@dataclass
class RunSummary:
    runs: list[tuple[str, str, bool, float]] = field(default_factory=list)  # sensor, key, ok, secs
    orphans_failed: int = 0
    finished_in_doubt: int = 0  # journaled operations whose evidence a killed process left unfinished

    @property
    def failed(self) -> list[str]:
        return [key for _, key, ok, _ in self.runs if not ok]


@contextmanager
def exclusive_run(home: Path) -> Iterator[None]:
    """One ``run`` per home at a time (so a STARTED run found at start is truly orphaned)."""
    home.mkdir(parents=True, exist_ok=True)
    fd = open_lock(home, "run.lock")
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise ReplayError(
                ErrorCode.DAEMON_RUNNING, "another `replay-assets run` is active on this home"
            ) from None
        yield
    finally:
        os.close(fd)


def run_if_idle(settings: Settings, dagster_home: Path) -> RunSummary | None:
    """The summary of a ``run`` that had nothing to do, or None when the full path must run:
    the instance's files are not as the last settled ``run`` left them, or the warehouse or the
    landing area holds work (``usecases/idle.py``). Holds the run lock, as ``run`` does."""
    if not settleable(settings) or not (settings.home / "warehouse.duckdb").is_file():
        return None
    if settings.fail_point:  # a crash test's kill point lies on the full path
        return None
    pipeline = Pipeline(settings)
    pipeline.require_own_files()
    with exclusive_run(settings.home):
        if not _as_settled(settings.home, dagster_home) or pending_work(pipeline) is not None:
            return None
        if not _as_settled(settings.home, dagster_home):  # a Dagster process wrote meanwhile
            return None
    return RunSummary()


def settleable(settings: Settings) -> bool:
    """Whether the instance's state is in files this module can read: the embedded DuckDB
    warehouse and no instance file of the operator's (e.g. PostgreSQL, whose runs no file
    shows)."""
    return settings.warehouse == "duckdb" and settings.dagster_yaml is None


def instance_files(dagster_home: Path) -> list[list[object]]:
    """Every file of the instance (its settings, run, event-log and schedule storage, and the
    write-ahead logs beside them) with its size, modification time and inode; compute logs
    left out."""
    found: list[list[object]] = []
    for root, dirs, names in os.walk(dagster_home):
        if Path(root) == dagster_home:
            dirs[:] = [d for d in dirs if d not in NOT_STATE]
        for name in names:
            path = Path(root) / name
            st = path.lstat()
            found.append([str(path.relative_to(dagster_home)), st.st_size, st.st_mtime_ns, st.st_ino])
    return sorted(found, key=lambda entry: str(entry[0]))


def warehouse_files(home: Path) -> list[list[object]]:
    """The warehouse's files with their size, modification time and inode, and the digest of
    its headers, which every checkpoint rewrites."""
    found = _stat_entries(home, [home / name for name in WAREHOUSE_FILES])
    try:
        with open(home / WAREHOUSE_FILES[0], "rb") as fh:
            found.append(["headers", hashlib.sha256(fh.read(WAREHOUSE_HEADER_BYTES)).hexdigest()])
    except FileNotFoundError:
        pass
    return found


def copy_files(home: Path) -> list[list[object]]:
    """What a refresh of the published copy reads and writes: the warehouse's files and the
    copy's (each with its size, modification time and inode; a link with its target)."""
    found = warehouse_files(home)
    found += _stat_entries(home, [home / PUBLISHED_DB, home / f"{PUBLISHED_DB}.wal"])
    for root, dirs, names in os.walk(home / PUBLISHED):
        found += _stat_entries(home, [Path(root) / n for n in [*names, *dirs]])
    return sorted(found, key=lambda entry: str(entry[0]))


def copy_current(home: Path) -> bool:
    """Whether the warehouse and the published copy are as the last settled ``run`` left them
    after its refresh: a refresh now would write the same rows again."""
    try:
        data = read_own_file(home, SETTLED_FILE)
        recorded = json.loads(data) if data is not None else None
        return isinstance(recorded, dict) and recorded.get("copy") == copy_files(home)
    except (ReplayError, OSError, ValueError, RecursionError):
        return False


def record_settled(
    home: Path, dagster_home: Path, files: list[list[object]], warehouse: list[list[object]]
) -> None:
    """Record ``files`` as the instance's settled state (``runner.settle_instance`` proved it),
    and the copy as it is now when the warehouse is still ``warehouse``, as it was before the
    refresh: a write after it would be one the copy lacks."""
    copy = copy_files(home) if warehouse_files(home) == warehouse else None
    document = {"dagster_home": str(dagster_home.resolve()), "files": files, "copy": copy}
    write_own_file(home, SETTLED_FILE, json.dumps(document).encode())


def record_refreshed(home: Path, dagster_home: Path, warehouse: list[list[object]]) -> None:
    """After an idle ``run`` refreshed the copy: record the copy as it is now, so the next idle
    ``run`` need not refresh it again (only while the instance is still as settled)."""
    if _as_settled(home, dagster_home):
        record_settled(home, dagster_home, instance_files(dagster_home), warehouse)


def _stat_entries(home: Path, paths: list[Path]) -> list[list[object]]:
    entries: list[list[object]] = []
    for path in paths:
        try:
            st = path.lstat()
        except FileNotFoundError:
            continue
        target = os.readlink(path) if path.is_symlink() else ""
        entries.append([str(path.relative_to(home)), st.st_size, st.st_mtime_ns, st.st_ino, target])
    return entries


def forget_settled(home: Path) -> None:
    (home / SETTLED_FILE).unlink(missing_ok=True)


def _as_settled(home: Path, dagster_home: Path) -> bool:
    try:
        data = read_own_file(home, SETTLED_FILE)
        recorded = json.loads(data) if data is not None else None
        if (dagster_home / "dagster.yaml").read_bytes() != PROJECT_INSTANCE_CONFIG.read_bytes():
            return False  # an instance file of the operator's may keep its storage anywhere
        files = instance_files(dagster_home)
    except (ReplayError, OSError, ValueError, RecursionError):
        return False
    if not isinstance(recorded, dict):
        return False
    return recorded.get("dagster_home") == str(dagster_home.resolve()) and recorded.get("files") == files
