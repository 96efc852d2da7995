"""The journal port written once for both engines, over the unit's ``Sql``: the entries, their
compare-and-set moves with an audit row each, the operator's hold and the commit markers (the
fences). Stores identities, states, versions, timestamps and counts, never row values.

A compare-and-set reads the entry in the unit and writes it only from the version it read. On
DuckDB the unit is a transaction under the one writer's lock; on Delta another writer's move in
between is a commit to ``operations`` during the unit, which its fence refuses: either way the
check and the write are one. The commit marker is written in the mutation's own unit, so it becomes
visible with the mutation's rows, or not at all."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

from replay_assets.core.errors import ErrorCode, ReplayError
from replay_assets.core.status import CommitState
from replay_assets.storage.rules.journal import (
    AUDIT,
    AUDIT_SQL,
    COLUMNS,
    HELD,
    IN_DOUBT,
    UNFINISHED,
    UNFINISHED_SQL,
    Entry,
    Operation,
    changed_concurrently,
    entry_of,
    refuse_held,
    require_move,
    same_intent,
)
from replay_assets.storage.rules.sql import Sql

S = CommitState
ENTRY = f"SELECT {COLUMNS} FROM operations WHERE operation_id = $operation_id"
FENCE = "SELECT operation_id FROM commit_markers WHERE operation_id = $operation_id"


class JournalReading:
    def __init__(self, sql: Sql) -> None:
        self.sql = sql

    def journal_entry(self, operation_id: str) -> Entry | None:
        found = self.sql.rows(ENTRY, operation_id=operation_id)
        return entry_of(list(found[0].values())) if found else None

    def reload_entry(self, operation_id: str) -> Entry:
        entry = self.journal_entry(operation_id)
        assert entry is not None, "the journal entry was written in this unit"
        return entry

    def require_no_hold(self) -> None:
        """Fails with REPLAY_COMMIT_UNKNOWN while an operator holds any operation in
        COMMIT_UNKNOWN. The hold is warehouse-wide on purpose: every later operation builds on the
        held one (a load date's identity includes the day before's snapshot, aggregates come from
        the certified pointer) and the published copy exports the whole certified state."""
        refuse_held([(r["operation_id"], r["kind"], r["partition_key"]) for r in self.sql.rows(HELD)])

    def fence_committed(self, operation_id: str) -> bool:
        return bool(self.sql.rows(FENCE, operation_id=operation_id))

    def committed_in_doubt(self) -> list[Operation]:
        """Operations whose fence proves a commit but whose entry never reached COMPLETE, oldest first."""
        return [Operation(**row) for row in self.sql.rows(IN_DOUBT)]

    def unfinished_operations(self) -> list[dict[str, Any]]:
        """Every operation that is not COMPLETE (``UNFINISHED`` columns), oldest move first."""
        return [dict(zip(UNFINISHED, r.values(), strict=True)) for r in self.sql.rows(UNFINISHED_SQL)]

    def operation_audit(self, operation_id: str) -> list[dict[str, Any]]:
        """The operation's moves (``AUDIT`` columns), in version order."""
        rows = self.sql.rows(AUDIT_SQL, operation_id=operation_id)
        return [dict(zip(AUDIT, r.values(), strict=True)) for r in rows]


class JournalWriting(JournalReading):
    def create_or_get_entry(self, op: Operation, actor: str, now: dt.datetime) -> Entry:
        """The durable intent. The same id with another intent digest fails before any I/O on the
        target."""
        entry = self.journal_entry(op.operation_id)
        if entry is not None:
            return same_intent(entry, op)
        row = {"operation_id": op.operation_id, "kind": op.kind, "asset": op.asset}
        row |= {"partition_key": op.partition_key, "intent_digest": op.intent_digest}
        self.sql.insert(
            "operations",
            [{**row, "state": S.PREPARING.value, "version": 1, "created_at": now, "updated_at": now}],
        )
        self._audit(
            op.operation_id, version=1, move=(None, S.PREPARING), actor=actor, note="intent recorded", now=now
        )
        return self.reload_entry(op.operation_id)

    def cas_entry(
        self,
        entry: Entry,
        *,
        nxt: CommitState,
        actor: str,
        note: str,
        now: dt.datetime,
        result: dict[str, Any] | None = None,
        target_sha256: str | None = None,
    ) -> Entry:
        """Move ``entry`` to ``nxt`` only if nobody moved it since it was read."""
        require_move(entry, nxt)
        current = self.journal_entry(entry.operation_id)
        if current is None or (current.version, current.state) != (entry.version, entry.state):
            raise changed_concurrently(entry)
        kept = result if result is not None else current.result
        row = {
            "operation_id": entry.operation_id,
            "state": nxt.value,
            "version": current.version + 1,
            "updated_at": now,
            "result": json.dumps(kept, sort_keys=True) if kept is not None else None,
            "target_sha256": target_sha256 if target_sha256 is not None else current.target_sha256,
        }
        self.sql.upsert("operations", [row], on=("operation_id",))
        move = (entry.state, nxt)
        self._audit(
            entry.operation_id, version=current.version + 1, move=move, actor=actor, note=note, now=now
        )
        return self.reload_entry(entry.operation_id)

    def write_fence(self, op: Operation, now: dt.datetime) -> None:
        """Raises REPLAY_RECOVERY_CONFLICT when the operation's fence exists: another worker of the
        same operation committed it first (its unit, and with it this one's mutation, is then
        rolled back by the caller)."""
        if self.fence_committed(op.operation_id):
            raise ReplayError(
                ErrorCode.RECOVERY_CONFLICT,
                f"operation {op.operation_id[:16]} was committed concurrently (its fence exists)",
            )
        row = {"operation_id": op.operation_id, "kind": op.kind, "partition_key": op.partition_key}
        self.sql.insert("commit_markers", [{**row, "input_identity": op.input_identity, "committed_at": now}])

    def _audit(
        self,
        operation_id: str,
        *,
        version: int,
        move: tuple[CommitState | None, CommitState],
        actor: str,
        note: str,
        now: dt.datetime,
    ) -> None:
        before, after = move
        row = {
            "operation_id": operation_id,
            "version": version,
            "from_state": before.value if before else None,
        }
        row |= {"to_state": after.value, "actor": actor, "note": note, "changed_at": now}
        self.sql.insert("operation_audit", [row])
