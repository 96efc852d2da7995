"""Operator recovery of journaled operations: read-only inspect and plan, explicit apply.

Works with Dagster down: it needs only the warehouse, through its port (any engine). Every
applied action is a CAS transition on the operation's version with an audit row naming the
operator and the note.
"""

from __future__ import annotations

import datetime as dt
import enum
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from replay_assets.core.errors import ErrorCode, ReplayError
from replay_assets.core.journal import IN_DOUBT, MUTATION_BEGUN, Next, next_step
from replay_assets.core.status import CommitState
from replay_assets.storage.journal import entries
from replay_assets.storage.ports import Store
from replay_assets.storage.unit import WarehouseReader, WarehouseWriter

S = CommitState


class Action(enum.StrEnum):
    COMPLETE_EVIDENCE = "complete-evidence"  # the fence proves the commit: finish evidence only
    RETRY = "retry"  # no fence: the mutation provably did not commit; the next run retries it
    MARK_UNKNOWN = "mark-unknown"  # hold: nothing runs or publishes until the operator marks it
    MARK_COMMITTED = "mark-committed"  # release a hold whose fence is present: finish evidence
    MARK_NOT_COMMITTED = "mark-not-committed"  # release a hold without a fence: the next run mutates


@dataclass(frozen=True)
class Plan:
    operation_id: str
    state: CommitState
    version: int
    fence: bool
    actions: list[Action]
    explanation: str


def in_doubt(unit: WarehouseReader) -> list[dict[str, Any]]:
    """Operations that are not COMPLETE and not safely restartable as they are."""
    return unit.journal.unfinished_operations()


def inspect(unit: WarehouseReader, operation_id: str) -> dict[str, Any]:
    entry = _entry(unit, operation_id)
    return {
        "operation_id": entry.operation_id,
        "kind": entry.kind,
        "asset": entry.asset,
        "partition_key": entry.partition_key,
        "intent_digest": entry.intent_digest,
        "state": entry.state.value,
        "version": entry.version,
        "fence": unit.journal.fence_committed(operation_id),
        "target_sha256": entry.target_sha256,
        "audit": unit.journal.operation_audit(operation_id),
    }


def plan(unit: WarehouseReader, operation_id: str) -> Plan:
    """The actions that agree with the journal state and the fence. The fence is written in the
    target's own transaction, so it decides whether the mutation committed; an operator decides
    only when the pipeline may act on it (a hold, COMMIT_UNKNOWN, and its release)."""
    entry = _entry(unit, operation_id)
    fence = unit.journal.fence_committed(operation_id)
    actions, explanation = _actions(entry.state, fence)
    return Plan(
        operation_id,
        entry.state,
        version=entry.version,
        fence=fence,
        actions=actions,
        explanation=explanation,
    )


def _actions(state: CommitState, fence: bool) -> tuple[list[Action], str]:
    hold = [Action.MARK_UNKNOWN] if state in MUTATION_BEGUN else []
    if state is S.COMMIT_UNKNOWN and fence:
        return [Action.MARK_COMMITTED], (
            "held by an operator; the fence proves the mutation committed: check the target, then "
            "mark-committed completes its evidence"
        )
    if state is S.COMMIT_UNKNOWN:
        return [Action.MARK_NOT_COMMITTED], (
            "held by an operator; no fence: the mutation did not commit: mark-not-committed lets the "
            "next run execute it"
        )
    if next_step(state, fence, True) is Next.COMPLETE_EVIDENCE:
        return [Action.COMPLETE_EVIDENCE, *hold], (
            "the fence proves the mutation committed; only evidence is missing"
        )
    if state in IN_DOUBT or state in (S.PREPARING, S.PREPARED):
        return [Action.RETRY, *hold], "no fence: the mutation did not commit; the next run may retry it"
    return [], f"{state}: nothing to do"


def apply(
    store: Store,
    operation_id: str,
    action: Action,
    note: str,
    operator: str,
    evidence: Callable[[], object],
    now: dt.datetime,
) -> entries.Entry:
    """Carry out one planned action under CAS; refuses if the operation moved since it was planned."""
    with store.transaction() as unit:
        current = plan(unit, operation_id)
        if action not in current.actions:
            raise ReplayError(
                ErrorCode.RECOVERY_CONFLICT,
                f"action {action} is not planned for {current.state} (planned: "
                f"{', '.join(current.actions) or 'none'})",
            )
        entry = _entry(unit, operation_id)
        actor, what = f"operator:{operator}", f"{action}: {note}"
        if action is Action.RETRY:
            return _walk(
                unit,
                entry,
                states=[S.FAILED_PRE_COMMIT]
                if entry.state in (S.PREPARING, S.PREPARED)
                else [S.PREPARED, S.FAILED_PRE_COMMIT],
                actor=actor,
                note=what,
                now=now,
            )
        if action is Action.MARK_UNKNOWN:
            return unit.journal.cas_entry(entry, nxt=S.COMMIT_UNKNOWN, actor=actor, note=what, now=now)
        if action is Action.MARK_NOT_COMMITTED:
            return _walk(
                unit, entry, states=[S.PREPARED, S.FAILED_PRE_COMMIT], actor=actor, note=what, now=now
            )
        if entry.state in (S.COMMIT_UNKNOWN, S.COMMITTING):
            entry = unit.journal.cas_entry(entry, nxt=S.TARGET_COMMITTED, actor=actor, note=what, now=now)
        if entry.state is S.TARGET_COMMITTED:
            entry = unit.journal.cas_entry(entry, nxt=S.COMMITTED_INCOMPLETE, actor=actor, note=what, now=now)
    evidence()
    with store.transaction() as unit:
        return unit.journal.cas_entry(
            _entry(unit, operation_id), nxt=S.COMPLETE, actor=actor, note=what, now=now
        )


def _walk(
    unit: WarehouseWriter,
    entry: entries.Entry,
    states: list[CommitState],
    actor: str,
    note: str,
    now: dt.datetime,
) -> entries.Entry:
    for state in states:
        entry = unit.journal.cas_entry(entry, nxt=state, actor=actor, note=note, now=now)
    return entry


def _entry(unit: WarehouseReader, operation_id: str) -> entries.Entry:
    entry = unit.journal.journal_entry(operation_id)
    if entry is None:
        raise ReplayError(ErrorCode.USAGE, f"no operation {operation_id[:16]}")
    return entry
