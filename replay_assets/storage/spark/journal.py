"""The operation journal and its fence on Delta: the Spark unit's journal port.

The same rows as the DuckDB adapter's and the same rules (``rules/journal.py``: ``same_intent``,
``require_move``). A compare-and-set reads the entry in the unit and moves it only from the version
it read: another writer's move in between is a commit to ``operations`` during this unit, which its
fence refuses (``tables.py``), so the check and the write are one. The commit marker is a row of
``commit_markers`` written in the mutation's own unit: it becomes visible with the mutation's rows
in one fence, or not at all.
"""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

from pyspark.sql import functions as F

from replay_assets.core.status import CommitState
from replay_assets.storage.rules import journal
from replay_assets.storage.rules.journal import COLUMNS, Entry, Operation
from replay_assets.storage.spark.dialect import over_tables
from replay_assets.storage.spark.unit import On, UnitBase

S = CommitState


class JournalReading(On):
    def journal_entry(self, operation_id: str) -> Entry | None:
        found = self.u.frame("operations").where(F.col("operation_id") == F.lit(operation_id))
        rows = self.u.rows(found.select(*COLUMNS.split(", ")))
        return journal.entry_of(list(rows[0].values())) if rows else None

    def reload_entry(self, operation_id: str) -> Entry:
        entry = self.journal_entry(operation_id)
        assert entry is not None, "the journal entry was written in this unit"
        return entry

    def require_no_hold(self) -> None:
        rows = self.u.rows(self.u.sql(over_tables(journal.HELD)))
        journal.refuse_held([(r["operation_id"], r["kind"], r["partition_key"]) for r in rows])

    def fence_committed(self, operation_id: str) -> bool:
        marker = self.u.frame("commit_markers").where(F.col("operation_id") == F.lit(operation_id))
        return bool(marker.limit(1).collect())

    def committed_in_doubt(self) -> list[Operation]:
        return [Operation(**row) for row in self.u.rows(self.u.sql(over_tables(journal.IN_DOUBT)))]

    def unfinished_operations(self) -> list[dict[str, Any]]:
        """Every operation that is not COMPLETE, oldest move first (the shared statement)."""
        rows = self.u.rows(self.u.sql(over_tables(journal.UNFINISHED_SQL)))
        return [dict(zip(journal.UNFINISHED, r.values(), strict=True)) for r in rows]

    def operation_audit(self, operation_id: str) -> list[dict[str, Any]]:
        """The operation's moves, in version order (the shared statement)."""
        rows = self.u.rows(self.u.sql(over_tables(journal.AUDIT_SQL), operation_id=operation_id))
        return [dict(zip(journal.AUDIT, r.values(), strict=True)) for r in rows]


class JournalWriting(JournalReading):
    def create_or_get_entry(self, op: Operation, actor: str, now: dt.datetime) -> Entry:
        entry = self.journal_entry(op.operation_id)
        if entry is not None:
            return journal.same_intent(entry, op)
        row = {
            "operation_id": op.operation_id,
            "kind": op.kind,
            "asset": op.asset,
            "partition_key": op.partition_key,
            "intent_digest": op.intent_digest,
            "state": S.PREPARING.value,
            "version": 1,
            "created_at": now,
            "updated_at": now,
        }
        self.u.append("operations", [row])
        _audit(
            self.u,
            op.operation_id,
            version=1,
            before=None,
            after=S.PREPARING,
            actor=actor,
            note="intent recorded",
            now=now,
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
        journal.require_move(entry, nxt)
        current = self.journal_entry(entry.operation_id)
        if current is None or (current.version, current.state) != (entry.version, entry.state):
            raise journal.changed_concurrently(entry)
        version = current.version + 1
        row = {
            "operation_id": entry.operation_id,
            "state": nxt.value,
            "version": version,
            "updated_at": now,
            "result": json.dumps(result, sort_keys=True) if result is not None else _text(current.result),
            "target_sha256": target_sha256 if target_sha256 is not None else current.target_sha256,
        }
        self.u.merge(
            "operations", [row], on=("operation_id",), update=tuple(k for k in row if k != "operation_id")
        )
        _audit(
            self.u,
            entry.operation_id,
            version=version,
            before=entry.state,
            after=nxt,
            actor=actor,
            note=note,
            now=now,
        )
        return self.reload_entry(entry.operation_id)

    def write_fence(self, op: Operation, now: dt.datetime) -> None:
        row = {
            "operation_id": op.operation_id,
            "kind": op.kind,
            "partition_key": op.partition_key,
            "input_identity": op.input_identity,
            "committed_at": now,
        }
        self.u.append("commit_markers", [row])


def _audit(
    u: UnitBase,
    operation_id: str,
    *,
    version: int,
    before: CommitState | None,
    after: CommitState,
    actor: str,
    note: str,
    now: dt.datetime,
) -> None:
    row = {
        "operation_id": operation_id,
        "version": version,
        "from_state": before.value if before else None,
        "to_state": after.value,
        "actor": actor,
        "note": note,
        "changed_at": now,
    }
    u.append("operation_audit", [row])


def _text(result: dict[str, Any] | None) -> str | None:
    return json.dumps(result, sort_keys=True) if result is not None else None
