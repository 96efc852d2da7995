"""The operation journal's entries in the warehouse: what an operation is (its identity and
intent), the entry recorded for it, create-if-absent, and compare-and-set transitions with an
audit row each. Stores identities, states, versions, timestamps and counts, never row values."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import duckdb

from replay_assets.core.errors import ErrorCode, ReplayError
from replay_assets.core.journal import can_move
from replay_assets.core.status import CommitState
from replay_assets.storage.db.warehouse import one

S = CommitState


@dataclass(frozen=True)
class Entry:
    operation_id: str
    kind: str
    asset: str
    partition_key: str
    intent_digest: str
    state: CommitState
    version: int
    result: dict[str, Any] | None
    target_sha256: str | None


@dataclass(frozen=True)
class Operation:
    operation_id: str
    intent_digest: str
    kind: str
    asset: str
    partition_key: str
    input_identity: str


class Divert(Exception):
    """Raised by a mutation to replace itself: its transaction is rolled back and ``instead`` runs
    in a fresh one (a failed gate keeps only its candidate's evidence)."""

    def __init__(
        self, instead: Callable[[duckdb.DuckDBPyConnection], tuple[dict[str, Any], str | None]]
    ) -> None:
        super().__init__("divert")
        self.instead = instead


COLUMNS = "operation_id, kind, asset, partition_key, intent_digest, state, version, result, target_sha256"


def get(con: duckdb.DuckDBPyConnection, operation_id: str) -> Entry | None:
    row = one(con, f"SELECT {COLUMNS} FROM operations WHERE operation_id = ?", [operation_id])
    if row is None:
        return None
    return Entry(
        row[0],
        row[1],
        asset=row[2],
        partition_key=row[3],
        intent_digest=row[4],
        state=CommitState(row[5]),
        version=int(row[6]),
        result=json.loads(row[7]) if row[7] else None,
        target_sha256=row[8],
    )


def create_or_get(con: duckdb.DuckDBPyConnection, op: Operation, actor: str, now: dt.datetime) -> Entry:
    """The durable intent. The same id with another intent digest fails before any I/O on the target."""
    entry = get(con, op.operation_id)
    if entry is not None:
        if entry.intent_digest != op.intent_digest:
            raise ReplayError(
                ErrorCode.COMMIT_INTENT_CONFLICT,
                f"operation {op.operation_id[:16]} exists with another intent digest",
            )
        return entry
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
    return _reload(con, op.operation_id)


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
    if not can_move(entry.state, nxt):
        raise ReplayError(ErrorCode.RECOVERY_CONFLICT, f"{entry.state} cannot move to {nxt}")
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
        raise ReplayError(
            ErrorCode.RECOVERY_CONFLICT,
            f"operation {entry.operation_id[:16]} changed concurrently (expected version {entry.version})",
        )
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
    return _reload(con, entry.operation_id)


def _reload(con: duckdb.DuckDBPyConnection, operation_id: str) -> Entry:
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
