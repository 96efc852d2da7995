"""The recovery-aware executor every mutation goes through: the operation journal's steps
(create-if-absent, compare-and-set transitions), the mutation with its fence in one transaction,
then the evidence. Engine-neutral: each step is one transaction of a ``ports.Store``, and the
journal's rows and the fence are the ``storage.unit.WarehouseWriter``'s (``written_once.py``)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from replay_assets.core.errors import ErrorCode, ReplayError
from replay_assets.core.events import canonical_json
from replay_assets.core.journal import Next, next_step, operation_id
from replay_assets.core.status import CommitState
from replay_assets.storage.home import failpoints
from replay_assets.storage.journal.entries import Divert as Divert
from replay_assets.storage.journal.entries import Entry as Entry
from replay_assets.storage.journal.entries import Operation as Operation
from replay_assets.storage.ports import Store
from replay_assets.storage.rules.journal import COLUMNS as COLUMNS
from replay_assets.storage.unit import WarehouseWriter

S = CommitState

Mutation = Callable[[WarehouseWriter], tuple[dict[str, Any], str | None]]


@contextmanager
def _unheld(store: Store) -> Iterator[WarehouseWriter]:
    """Each transaction of the executor: refused first while an operator holds an operation, so a
    process that was mid-operation when the hold came stops at its next step."""
    with store.transaction() as unit:
        unit.journal.require_no_hold()
        yield unit


def execute(
    store: Store,
    op: Operation,
    mutate: Mutation,
    evidence: Callable[[], object],
    target_now: Callable[[WarehouseWriter, Entry], str | None],
    clock: Callable[[], dt.datetime],
    fail_point: str | None,
    actor: str = "pipeline",
    repair: Mutation | None = None,
) -> dict[str, Any]:
    """Run one operation so that any retry (another try, another run id, after SIGKILL anywhere)
    mutates the target at most once and finishes what is missing. Returns the recorded result.

    A COMPLETE operation whose target drifted from its record is not trusted: a repair operation,
    whose identity includes the observed target hash, runs ``repair``."""
    with store.released():  # each step locks for its own transaction: an operator may act between
        failpoints.hit(fail_point, f"{op.kind}:before_intent")
        with _unheld(store) as unit:
            entry = unit.journal.create_or_get_entry(op, actor, clock())
            observed = target_now(unit, entry) if entry.state is S.COMPLETE else None
            step = next_step(
                entry.state,
                unit.journal.fence_committed(op.operation_id),
                entry.state is not S.COMPLETE or observed == entry.target_sha256,
            )
        failpoints.hit(fail_point, f"{op.kind}:after_intent")
        if step is Next.STOP:  # unreachable after require_no_hold, kept so no step falls through
            raise ReplayError(ErrorCode.COMMIT_UNKNOWN, f"operation {op.operation_id[:16]} is {entry.state}")
        if step is Next.REPAIR:
            if repair is None:
                raise ReplayError(
                    ErrorCode.HISTORY_DIVERGED,
                    f"operation {op.operation_id[:16]}: the target no longer matches its recorded result",
                )
            identity = canonical_json([op.operation_id, observed or ""])
            fix = Operation(
                operation_id(f"repair_{op.kind}", op.asset, op.partition_key, identity),
                op.intent_digest,
                kind=f"repair_{op.kind}",
                asset=op.asset,
                partition_key=op.partition_key,
                input_identity=identity,
            )
            return execute(
                store,
                fix,
                mutate=repair,
                evidence=evidence,
                target_now=target_now,
                clock=clock,
                fail_point=fail_point,
                actor=actor,
                repair=repair,
            )
        if step is Next.RETURN_RECORDED:
            assert entry.result is not None
            return entry.result
        if step is Next.MUTATE:
            entry = _mutate(
                store, op, entry=entry, mutate=mutate, clock=clock, fail_point=fail_point, actor=actor
            )
        return _complete(store, op, evidence=evidence, clock=clock, fail_point=fail_point, actor=actor)


def _mutate(
    store: Store,
    op: Operation,
    entry: Entry,
    mutate: Mutation,
    clock: Callable[[], dt.datetime],
    fail_point: str | None,
    actor: str,
) -> Entry:
    with _unheld(store) as unit:
        entry = unit.journal.journal_entry(op.operation_id) or entry
        if unit.journal.fence_committed(
            op.operation_id
        ):  # another worker committed it since this one decided
            return entry
        for nxt in _path_to_committing(entry):
            entry = unit.journal.cas_entry(entry, nxt=nxt, actor=actor, note="ready to mutate", now=clock())
    failpoints.hit(fail_point, f"{op.kind}:after_committing")
    try:
        with _unheld(store) as unit:
            result, sha = mutate(unit)
            failpoints.hit(fail_point, f"{op.kind}:inside_target")
            return _fence(unit, op, actor=actor, clock=clock, result=result, sha=sha)
    except Divert as divert:
        with _unheld(store) as unit:
            result, sha = divert.instead(unit)
            return _fence(unit, op, actor=actor, clock=clock, result=result, sha=sha)


def _path_to_committing(entry: Entry) -> list[CommitState]:
    """The transitions to COMMITTING of an entry without a fence; any other state is a
    concurrent worker's doing, refused (REPLAY_RECOVERY_CONFLICT) so the caller may retry."""
    path = {
        S.PREPARING: [S.PREPARED, S.COMMITTING],
        S.PREPARED: [S.COMMITTING],
        S.FAILED_PRE_COMMIT: [S.PREPARING, S.PREPARED, S.COMMITTING],
        S.COMMITTING: [S.PREPARED, S.COMMITTING],  # no fence: provably not committed, retry
    }.get(entry.state)
    if path is None:
        raise ReplayError(
            ErrorCode.RECOVERY_CONFLICT,
            f"operation {entry.operation_id[:16]} is {entry.state} without its fence: changed concurrently",
        )
    return path


def _fence(
    unit: WarehouseWriter,
    op: Operation,
    actor: str,
    clock: Callable[[], dt.datetime],
    result: dict[str, Any],
    sha: str | None,
) -> Entry:
    unit.journal.write_fence(op, clock())
    return unit.journal.cas_entry(
        unit.journal.reload_entry(op.operation_id),
        nxt=S.TARGET_COMMITTED,
        actor=actor,
        note="target committed with its fence",
        now=clock(),
        result=result,
        target_sha256=sha,
    )


def _complete(
    store: Store,
    op: Operation,
    evidence: Callable[[], object],
    clock: Callable[[], dt.datetime],
    fail_point: str | None,
    actor: str,
) -> dict[str, Any]:
    failpoints.hit(fail_point, f"{op.kind}:after_target_commit")
    with _unheld(store) as unit:
        entry = unit.journal.reload_entry(op.operation_id)
        if entry.state is S.COMMITTING:  # the fence proved the commit of an interrupted attempt
            entry = unit.journal.cas_entry(
                entry,
                nxt=S.TARGET_COMMITTED,
                actor=actor,
                note="fence found: the mutation committed",
                now=clock(),
            )
        if entry.state is S.TARGET_COMMITTED:
            entry = unit.journal.cas_entry(
                entry, nxt=S.COMMITTED_INCOMPLETE, actor=actor, note="completing evidence", now=clock()
            )
    failpoints.hit(fail_point, f"{op.kind}:before_evidence")
    evidence()
    with _unheld(store) as unit:
        entry = unit.journal.reload_entry(op.operation_id)
        if entry.state is S.COMMITTED_INCOMPLETE:
            entry = unit.journal.cas_entry(
                entry, nxt=S.COMPLETE, actor=actor, note="evidence complete", now=clock()
            )
    failpoints.hit(fail_point, f"{op.kind}:after_complete")
    assert entry.result is not None
    return entry.result


def finish_committed(
    store: Store,
    evidence: Callable[[], object],
    clock: Callable[[], dt.datetime],
    fail_point: str | None,
) -> list[str]:
    """Complete the evidence of every operation whose fence proves a commit but whose process died
    before COMPLETE (nothing else would ever ask for them again). Returns their ids."""
    with store.connect() as unit:
        unit.journal.require_no_hold()
        operations = unit.journal.committed_in_doubt()
    for op in operations:
        _complete(store, op, evidence=evidence, clock=clock, fail_point=fail_point, actor="recovery:run")
    return [op.operation_id for op in operations]
