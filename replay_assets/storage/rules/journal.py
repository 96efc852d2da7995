"""The operation journal's rules both engines keep: an operation (its identity and intent), the
entry recorded for it, its row, and the refusals of the state machine."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from replay_assets.core.errors import ErrorCode, ReplayError
from replay_assets.core.journal import can_move
from replay_assets.core.status import CommitState

COLUMNS = "operation_id, kind, asset, partition_key, intent_digest, state, version, result, target_sha256"
UNFINISHED = ("operation_id", "kind", "partition_key", "state", "version", "updated_at")
AUDIT = ("version", "from", "to", "actor", "note", "at")
# Operations whose fence proves a commit but whose entry never reached COMPLETE, oldest first: the
# columns of an ``Operation``, in its order.
IN_DOUBT = """SELECT o.operation_id, o.intent_digest, o.kind, o.asset, o.partition_key, m.input_identity
FROM operations o JOIN commit_markers m ON m.operation_id = o.operation_id
WHERE o.state IN ('COMMITTING', 'TARGET_COMMITTED', 'COMMITTED_INCOMPLETE') ORDER BY o.created_at"""
# Every operation that is not COMPLETE (``UNFINISHED`` columns), oldest move first.
UNFINISHED_SQL = """SELECT operation_id, kind, partition_key, state, version, updated_at FROM operations
WHERE state <> 'COMPLETE' ORDER BY updated_at"""
# An operation's moves (``AUDIT`` columns), in version order.
AUDIT_SQL = """SELECT version, from_state, to_state, actor, note, changed_at FROM operation_audit
WHERE operation_id = $operation_id ORDER BY version"""
# The operations an operator holds in COMMIT_UNKNOWN (``refuse_held``).
HELD = """SELECT operation_id, kind, partition_key FROM operations WHERE state = 'COMMIT_UNKNOWN'
ORDER BY operation_id"""


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


def entry_of(row: Sequence[Any]) -> Entry:
    """An entry from its row, in ``COLUMNS`` order."""
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


def same_intent(entry: Entry, op: Operation) -> Entry:
    """The recorded entry of ``op``, refused when it holds another intent."""
    if entry.intent_digest != op.intent_digest:
        raise ReplayError(
            ErrorCode.COMMIT_INTENT_CONFLICT,
            f"operation {op.operation_id[:16]} exists with another intent digest",
        )
    return entry


def require_move(entry: Entry, nxt: CommitState) -> None:
    """Refuses a transition the state machine does not allow."""
    if not can_move(entry.state, nxt):
        raise ReplayError(ErrorCode.RECOVERY_CONFLICT, f"{entry.state} cannot move to {nxt}")


def changed_concurrently(entry: Entry) -> ReplayError:
    return ReplayError(
        ErrorCode.RECOVERY_CONFLICT,
        f"operation {entry.operation_id[:16]} changed concurrently (expected version {entry.version})",
    )


def refuse_held(held: Sequence[Sequence[str]]) -> None:
    """REPLAY_COMMIT_UNKNOWN naming the held operations (id, kind, partition), if any."""
    if held:
        named = ", ".join(f"{op_id[:16]} ({kind} {key})" for op_id, kind, key in held)
        raise ReplayError(
            ErrorCode.COMMIT_UNKNOWN,
            f"held by an operator in COMMIT_UNKNOWN: {named}; nothing runs or publishes until it is "
            "marked: `replay-assets recovery plan --operation-id ID`",
        )
