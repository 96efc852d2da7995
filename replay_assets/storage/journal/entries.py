"""The operation journal's entries in the warehouse: what an operation is (its identity and
intent), the entry recorded for it, create-if-absent, and compare-and-set transitions with an
audit row each. Stores identities, states, versions, timestamps and counts, never row values."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import duckdb

from replay_assets.core.errors import ErrorCode, ReplayError
from replay_assets.core.status import CommitState
from replay_assets.storage.db.warehouse import one
from replay_assets.storage.records import Entry as Entry
from replay_assets.storage.records import Operation as Operation
from replay_assets.storage.rules.journal import (
    AUDIT,
    AUDIT_SQL,
    COLUMNS,
    HELD,
    IN_DOUBT,
    UNFINISHED,
    UNFINISHED_SQL,
    changed_concurrently,
    entry_of,
    refuse_held,
    require_move,
    same_intent,
)

if TYPE_CHECKING:
    from replay_assets.storage.unit import WarehouseWriter

S = CommitState


class Divert(Exception):
    """Raised by a mutation to replace itself: its transaction is rolled back and ``instead`` runs
    in a fresh one (a failed gate keeps only its candidate's evidence)."""

    def __init__(self, instead: Callable[[WarehouseWriter], tuple[dict[str, Any], str | None]]) -> None:
        super().__init__("divert")
        self.instead = instead


def get(con: duckdb.DuckDBPyConnection, operation_id: str) -> Entry | None:
    row = one(con, f"SELECT {COLUMNS} FROM operations WHERE operation_id = ?", [operation_id])
    return None if row is None else entry_of(row)


def create_or_get(con: duckdb.DuckDBPyConnection, op: Operation, actor: str, now: dt.datetime) -> Entry:
    """The durable intent. The same id with another intent digest fails before any I/O on the target."""
    entry = get(con, op.operation_id)
    if entry is not None:
        return same_intent(entry, op)
    con.execute(
        "INSERT INTO operations ("
        "operation_id, kind, asset, partition_key, intent_digest, state, version, result, "
        "target_sha256, created_at, updated_at"
        ") VALUES (?, ?, ?, ?, ?, ?, 1, NULL, NULL, ?, ?)",
        [op.operation_id, op.kind, op.asset, op.partition_key, op.intent_digest, S.PREPARING.value, now, now],
    )
    _audit(
        con,
        op.operation_id,
        version=1,
        before=None,
        after=S.PREPARING,
        actor=actor,
        note="intent recorded",
        now=now,
    )
    return reload(con, op.operation_id)


def cas(
    con: duckdb.DuckDBPyConnection,
    entry: Entry,
    nxt: CommitState,
    actor: str,
    note: str,
    now: dt.datetime,
    result: dict[str, Any] | None = None,
    target_sha256: str | None = None,
) -> Entry:
    """Move ``entry`` to ``nxt`` only if nobody moved it since it was read (version check)."""
    require_move(entry, nxt)
    rows = con.execute(
        """UPDATE operations SET state = ?, version = version + 1, updated_at = ?,
               result = coalesce(?, result), target_sha256 = coalesce(?, target_sha256)
           WHERE operation_id = ? AND version = ? AND state = ? RETURNING version""",
        [
            nxt.value,
            now,
            json.dumps(result, sort_keys=True) if result is not None else None,
            target_sha256,
            entry.operation_id,
            entry.version,
            entry.state.value,
        ],
    ).fetchall()
    if not rows:
        raise changed_concurrently(entry)
    _audit(
        con,
        entry.operation_id,
        version=int(rows[0][0]),
        before=entry.state,
        after=nxt,
        actor=actor,
        note=note,
        now=now,
    )
    return reload(con, entry.operation_id)


def reload(con: duckdb.DuckDBPyConnection, operation_id: str) -> Entry:
    entry = get(con, operation_id)
    assert entry is not None, "the journal entry was written in this transaction"
    return entry


def _audit(
    con: duckdb.DuckDBPyConnection,
    operation_id: str,
    version: int,
    before: CommitState | None,
    after: CommitState,
    actor: str,
    note: str,
    now: dt.datetime,
) -> None:
    con.execute(
        "INSERT INTO operation_audit ("
        "operation_id, version, from_state, to_state, actor, note, changed_at"
        ") VALUES (?, ?, ?, ?, ?, ?, ?)",
        [operation_id, version, before.value if before else None, after.value, actor, note, now],
    )


def require_no_hold(con: duckdb.DuckDBPyConnection) -> None:
    """Fails with REPLAY_COMMIT_UNKNOWN while an operator holds any operation in COMMIT_UNKNOWN.

    The hold is warehouse-wide on purpose: every later operation builds on the held one (a load
    date's identity includes the day before's snapshot, aggregates come from the certified pointer)
    and the published copy exports the whole certified state."""
    refuse_held(con.execute(HELD).fetchall())


def fence_committed(con: duckdb.DuckDBPyConnection, operation_id: str) -> bool:
    return one(con, "SELECT 1 FROM commit_markers WHERE operation_id = ?", [operation_id]) is not None


def write_fence(con: duckdb.DuckDBPyConnection, op: Operation, now: dt.datetime) -> None:
    """Raises REPLAY_RECOVERY_CONFLICT when the operation's fence exists: another worker of the
    same operation committed it first (its transaction, and with it this one's mutation, is then
    rolled back by the caller)."""
    try:
        con.execute(
            "INSERT INTO commit_markers (operation_id, kind, partition_key, input_identity, committed_at) "
            "VALUES (?, ?, ?, ?, ?)",
            [op.operation_id, op.kind, op.partition_key, op.input_identity, now],
        )
    except duckdb.ConstraintException:
        raise ReplayError(
            ErrorCode.RECOVERY_CONFLICT,
            f"operation {op.operation_id[:16]} was committed concurrently (its fence exists)",
        ) from None


def committed_in_doubt(con: duckdb.DuckDBPyConnection) -> list[Operation]:
    """Operations whose fence proves a commit but whose entry never reached COMPLETE, oldest first."""
    return [Operation(*row) for row in con.execute(IN_DOUBT).fetchall()]


def unfinished(con: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
    """Every operation that is not COMPLETE (``UNFINISHED`` columns), oldest move first."""
    return [dict(zip(UNFINISHED, r, strict=True)) for r in con.execute(UNFINISHED_SQL).fetchall()]


def audit_trail(con: duckdb.DuckDBPyConnection, operation_id: str) -> list[dict[str, Any]]:
    """The operation's moves (``AUDIT`` columns), in version order."""
    rows = con.execute(AUDIT_SQL, {"operation_id": operation_id}).fetchall()
    return [dict(zip(AUDIT, a, strict=True)) for a in rows]
