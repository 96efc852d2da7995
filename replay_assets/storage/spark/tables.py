"""A set of Delta tables that commits as one: the Spark adapter's transaction and fence.

Delta commits one table per statement; Sail 0.7 has no multi-statement transaction, no
``RESTORE`` and ignores ``txnAppId`` (docs/deploy.md, "Sail 0.7.2 and Delta"). So an operation
that writes several tables commits through one more table, ``_fences``: a row per committed
operation, keyed by a dense sequence number, naming the Delta version every table reached. That
row is written by one ``MERGE`` keyed on the next sequence number, a single Delta commit, so two
writers cannot both win it (a compare-and-set; ``test_sail_delta.py`` proves the engine's part).

- Readers pin every table at the version the newest fence names (``VERSION AS OF``): the writes
  of an operation that has not fenced, or never will (killed, lost the race), are never seen.
- A writer first returns every table that is ahead of the newest fence to its fenced version
  (``INSERT OVERWRITE ... VERSION AS OF``, since ``RESTORE`` is missing), then writes at the head
  and reads its own writes there.
- Before fencing it checks that each table it began with is exactly its own commits ahead of
  where it began (no commits for a table it only read). Delta versions are dense, so another
  writer's commit in between (a rollback included) shows as a version too many: the operation is
  refused, nothing it wrote is ever read, and the next writer's rollback removes it. A commit
  after the check is past the fenced version, and after every read this writer made.
- An operation id fences at most once: a retry of a fenced operation finds its row and writes
  nothing (``committed_operation``), which is the journal's exactly-once on this engine.

Stores table names, versions, sequence numbers and operation ids, never row values.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from pyarrow import fs as pafs
from pyspark.errors import PySparkException
from pyspark.sql import DataFrame, SparkSession

from replay_assets.core.errors import ErrorCode, ReplayError

FENCES = "_fences"
_NAME = re.compile(r"[a-z_][a-z0-9_]{0,62}")
_LOG_FILE = re.compile(r"(\d{20})\.json")
# How engines report a Delta commit that lost to a concurrent one: Sail 0.7 ("Failed to commit
# transaction: <version>") and Delta on Spark (io.delta.exceptions.Concurrent...Exception).
_CONFLICT = re.compile(r"Failed to commit transaction|Concurrent\w*Exception")


# Sail 0.7 cannot read a version older than a table's newest checkpoint, except versions 0 and 1
# ("Missing commit file: expected version 0, found N"), and a pinned read of the fenced version
# must work while a writer is ahead: the adapter's tables are created without checkpoints (the
# property persists in the table's metadata, so later MERGEs do not checkpoint either).
_NO_CHECKPOINTS = {"delta.checkpointInterval": str(2**31 - 1)}


def _save(frame: DataFrame, uri: str, mode: str, tag: str | None = None) -> None:
    """One Delta commit of ``frame`` to ``uri`` (``append`` or ``overwrite``), its log entry
    carrying ``tag`` as its ``userMetadata`` when given."""
    tagged = {"userMetadata": tag} if tag else {}
    frame.write.format("delta").options(**_NO_CHECKPOINTS, **tagged).mode(mode).save(uri)


def commit_info(uri: str, version: int) -> dict[str, Any] | None:
    """The ``commitInfo`` of a Delta table's commit ``version``; ``None`` when there is none."""
    filesystem, base = pafs.FileSystem.from_uri(uri)
    try:
        with filesystem.open_input_stream(f"{base}/_delta_log/{version:020d}.json") as stream:
            lines = stream.read().decode().splitlines()
    except FileNotFoundError:
        return None
    for line in lines:
        action = json.loads(line) if line.strip() else {}
        if "commitInfo" in action:
            found: dict[str, Any] = action["commitInfo"]
            return found
    return None


@contextmanager
def _committing(what: str) -> Iterator[None]:
    """One Delta commit; losing it to a concurrent writer is WAREHOUSE_BUSY, not an engine error."""
    try:
        yield
    except PySparkException as err:
        if _CONFLICT.search(str(err)):
            raise _busy(f"another writer committed to {what} at the same time") from err
        raise


@dataclass(frozen=True)
class Snapshot:
    """The newest fence: its sequence number (0 before the first) and each table's version."""

    seq: int
    versions: Mapping[str, int]


EMPTY = Snapshot(0, {})


def latest_version(uri: str) -> int | None:
    """The newest version in a Delta table's log, ``None`` when there is no table. Read from the
    log's file names through Arrow's file systems (local, S3, GCS, HDFS, ABFS): Sail 0.7 has no
    ``DESCRIBE HISTORY``. Checkpoints and log cleanup never remove the newest commit file."""
    filesystem, base = pafs.FileSystem.from_uri(uri)
    infos = filesystem.get_file_info(pafs.FileSelector(f"{base}/_delta_log", allow_not_found=True))
    found = [_LOG_FILE.fullmatch(PurePosixPath(info.path).name) for info in infos]
    return max((int(m.group(1)) for m in found if m), default=None)


@dataclass(frozen=True)
class EngineLanding:
    """The home's landing folder ``local`` as the engine's workers reach it: the URI ``base``
    holding the same tree (a bucket this machine mounts at ``local``, say)."""

    local: Path
    base: str

    def uri(self, path: Path) -> str:
        relative = Path(os.path.abspath(path)).relative_to(os.path.abspath(self.local))
        return f"{self.base.rstrip('/')}/{relative.as_posix()}"


class DeltaTables:
    """The Delta tables under ``root`` (a folder or any URI the engine and Arrow reach)."""

    def __init__(self, spark: SparkSession, root: str, landing: EngineLanding | None = None) -> None:
        if "`" in root:
            raise ReplayError(ErrorCode.USAGE, "a Delta root must not contain a backtick")
        if "://" not in root:  # a local folder: Arrow's file systems take absolute paths only
            root = os.path.abspath(root)
        self.spark, self.root = spark, root.rstrip("/")
        self.landing = landing

    def landed_file(self, path: Path) -> str:
        """Where the engine's workers read the landing area's file at ``path``: under the
        landing URI when one is set, else the path itself (absolute)."""
        if self.landing is None:
            return os.path.abspath(path)
        return self.landing.uri(path)

    def uri(self, table: str) -> str:
        if not _NAME.fullmatch(table):
            raise ReplayError(ErrorCode.USAGE, f"not a table name: {table[:64]!r}")
        return f"{self.root}/{table}"

    def ref(self, table: str) -> str:
        """``table`` as Spark SQL names it."""
        return f"delta.`{self.uri(table)}`"

    def committed(self) -> Snapshot:
        """The newest fence (``EMPTY`` before the first)."""
        if latest_version(self.uri(FENCES)) is None:
            return EMPTY
        rows = self.spark.sql(
            f"SELECT seq, versions FROM {self.ref(FENCES)} ORDER BY seq DESC LIMIT 1"
        ).collect()
        if not rows:
            return EMPTY
        return Snapshot(int(rows[0]["seq"]), json.loads(rows[0]["versions"]))

    def committed_operation(self, operation_id: str) -> bool:
        """Whether ``operation_id`` has fenced."""
        if latest_version(self.uri(FENCES)) is None:
            return False
        found = self.spark.sql(
            f"SELECT 1 FROM {self.ref(FENCES)} WHERE operation_id = :op LIMIT 1", args={"op": operation_id}
        ).collect()
        return bool(found)

    def read(self, table: str, snapshot: Snapshot) -> DataFrame | None:
        """``table`` as ``snapshot`` committed it; ``None`` when it had not committed the table."""
        version = snapshot.versions.get(table)
        if version is None:
            return None
        return self.spark.read.format("delta").option("versionAsOf", version).load(self.uri(table))

    def begin(self, operation_id: str, tables: tuple[str, ...]) -> Writer | None:
        """A writer of ``tables`` for ``operation_id`` on the newest fence, each table returned to
        its fenced version first; ``None`` when the operation has fenced already. The question is
        asked after the snapshot is read: a fence of it after that takes this writer's sequence
        number, so this writer cannot fence it a second time."""
        if FENCES in tables:
            raise ValueError(f"{FENCES} is written by fences only")
        snapshot = self.committed()
        if self.committed_operation(operation_id):
            return None
        base: dict[str, int | None] = {}
        for table in tables:
            head = latest_version(self.uri(table))
            fenced = snapshot.versions.get(table)
            if head is not None and head != fenced and not self._both_empty(table, head, fenced):
                with _committing(table):
                    self._roll_back(table, fenced)
                # the rollback is exactly one commit: reading the head again could count another
                # writer's commit made just after it as this writer's base
                head += 1
            base[table] = head
        return Writer(self, operation_id, snapshot, base)

    def _both_empty(self, table: str, head: int, fenced: int | None) -> bool:
        """Whether ``table`` holds no rows at ``head`` nor at its fenced version: its head is the
        fenced content already, and Sail 0.7 commits nothing for an empty overwrite of an empty
        table, so a rollback there would not be the one commit ``begin`` counts."""
        reader = self.spark.read.format("delta")
        at_head = reader.option("versionAsOf", head).load(self.uri(table))
        if at_head.limit(1).collect():
            return False
        if fenced is None:
            return True
        return not reader.option("versionAsOf", fenced).load(self.uri(table)).limit(1).collect()

    def _roll_back(self, table: str, fenced: int | None) -> None:
        """Return ``table`` to its fenced content with one commit: an empty table when no fence
        names it yet (an operation created it and never fenced). Through the DataFrame writer:
        Sail 0.7 refuses ``INSERT INTO|OVERWRITE delta.`path```, and overwriting a path from a
        time-travel read of itself is a plain Delta overwrite there."""
        reader = self.spark.read.format("delta")
        if fenced is not None:
            source = reader.option("versionAsOf", fenced).load(self.uri(table))
        else:
            source = reader.load(self.uri(table)).where("false")
        _save(source, self.uri(table), "overwrite")


@dataclass
class Writer:
    """One operation's writes; ``fence`` makes all of them visible at once, or none."""

    tables: DeltaTables
    operation_id: str
    snapshot: Snapshot
    base: dict[str, int | None]
    commits: dict[str, int] = field(default_factory=dict)
    # tells this writer's fence row from another worker's fence of the same operation
    attempt: str = field(default_factory=lambda: uuid.uuid4().hex)

    def head(self, table: str) -> DataFrame:
        """``table`` at its newest version: the fenced state plus this writer's own writes."""
        self._writable(table)
        return self.tables.spark.read.format("delta").load(self.tables.uri(table))

    def append(self, table: str, frame: DataFrame) -> None:
        self._writable(table)
        with _committing(table):
            _save(frame, self.tables.uri(table), "append")
        self._count(table)

    def appended(self, table: str, frame: DataFrame) -> int:
        """Append ``frame`` as at most one commit and return the rows it added, read from the
        commit's log entry: the engine computes the frame once, and never sends a row here.
        Sail commits nothing for no row, so the commit is tagged with this writer's attempt and
        counted only when the version after the head is this tag's (another writer's commit in
        between is not counted as this writer's; the fence refuses the operation either way)."""
        self._writable(table)
        uri = self.tables.uri(table)
        before = latest_version(uri)
        version = 0 if before is None else before + 1
        tag = f"{self.attempt}/{table}/{version}"
        with _committing(table):
            _save(frame, uri, "append", tag)
        info = commit_info(uri, version)
        if info is None or info.get("userMetadata") != tag:
            return 0
        self._count(table)
        rows = info.get("operationMetrics", {}).get("numOutputRows")
        if rows is None:  # an engine that records no metrics: the versions' difference, counted
            reader = self.tables.spark.read.format("delta")
            earlier = reader.option("versionAsOf", before).load(uri).count() if before is not None else 0
            return int(reader.option("versionAsOf", version).load(uri).count()) - int(earlier)
        return int(rows)

    def overwrite(self, table: str, frame: DataFrame) -> None:
        self._writable(table)
        with _committing(table):
            _save(frame, self.tables.uri(table), "overwrite")
        self._count(table)

    def statement(self, table: str, sql: str) -> None:
        """Run one statement that commits to ``table`` once (``MERGE``, ``UPDATE``, ``DELETE``),
        naming it ``{target}`` in ``sql``. Values reach it through its source views, never its
        text: Sail 0.7 refuses parameters on a command ("command with parameters")."""
        self._writable(table)
        with _committing(table):
            self.tables.spark.sql(sql.format(target=self.tables.ref(table))).collect()
        self._count(table)

    def fence(self, now: dt.datetime) -> Snapshot:
        """Make this writer's commits visible as one: the next fence row, compare-and-set on its
        sequence number. Refused (WAREHOUSE_BUSY), with nothing visible, when another writer
        committed to one of these tables meanwhile or fenced first."""
        versions = dict(self.snapshot.versions)
        for table, start in self.base.items():  # read-only ones too: head() may have read them
            count = self.commits.get(table, 0)
            if count:  # a new table's first commit is version 0
                expected: int | None = (start if start is not None else -1) + count
            else:
                expected = start
            if latest_version(self.tables.uri(table)) != expected:
                raise _busy(f"another writer committed to {table} during this operation")
            if expected is not None and count:
                versions[table] = expected
        seq = self.snapshot.seq + 1
        row = self.tables.spark.createDataFrame(
            [(seq, self.operation_id, self.attempt, json.dumps(versions, sort_keys=True), now)],
            "seq BIGINT, operation_id STRING, attempt STRING, versions STRING, committed_at TIMESTAMP",
        )
        if latest_version(self.tables.uri(FENCES)) is None:
            try:
                _save(row.limit(0), self.tables.uri(FENCES), "append")
            except PySparkException:  # another writer created it at the same time: either serves
                if latest_version(self.tables.uri(FENCES)) is None:
                    raise
        view = f"_fence_{self.attempt}"  # its own name: writers may share a session
        row.createOrReplaceTempView(view)
        try:
            with _committing("the fences"):  # the other writer won this sequence number
                self.tables.spark.sql(
                    f"MERGE INTO {self.tables.ref(FENCES)} f USING {view} r ON f.seq = r.seq "
                    "WHEN NOT MATCHED THEN INSERT *"
                ).collect()
        finally:
            self.tables.spark.catalog.dropTempView(view)
        won = self.tables.spark.sql(
            f"SELECT attempt FROM {self.tables.ref(FENCES)} WHERE seq = :seq", args={"seq": seq}
        ).collect()
        if [r["attempt"] for r in won] != [self.attempt]:
            raise _busy("another writer fenced first")
        return Snapshot(seq, versions)

    def _writable(self, table: str) -> None:
        if table not in self.base:
            raise ValueError(f"{table} is not among the tables this writer began with")

    def _count(self, table: str) -> None:
        self.commits[table] = self.commits.get(table, 0) + 1


def _busy(why: str) -> ReplayError:
    return ReplayError(ErrorCode.WAREHOUSE_BUSY, f"the operation was not fenced: {why}; run it again")
