"""The operation journal in the warehouse: create-if-absent, compare-and-set transitions with an
audit row each, the fence (``commit_markers``) written in the mutation's own transaction, and a
recovery-aware executor that every mutation goes through. Stores identities, states, versions,
timestamps and counts — never row values."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import duckdb

from replay_assets.core.errors import ErrorCode, ReplayError
from replay_assets.core.events import canonical_json
from replay_assets.core.journal import Next, next_step, operation_id
from replay_assets.core.status import CommitState
from replay_assets.storage.db import failpoints
from replay_assets.storage.db.warehouse import one
from replay_assets.storage.journal.entries import COLUMNS as COLUMNS
from replay_assets.storage.journal.entries import Divert as Divert
from replay_assets.storage.journal.entries import Entry as Entry
from replay_assets.storage.journal.entries import Operation as Operation
from replay_assets.storage.journal.entries import _reload, cas, create_or_get, get
from replay_assets.storage.ports import WarehouseWriter

S = CommitState


def require_no_hold(con: duckdb.DuckDBPyConnection) -> None:
    """Fails with REPLAY_COMMIT_UNKNOWN while an operator holds any operation in COMMIT_UNKNOWN.

    The hold is warehouse-wide on purpose: every later operation builds on the held one (a load
    date's identity includes the day before's snapshot, aggregates come from the certified pointer)
    and the published copy exports the whole certified state."""
    rows = con.execute(
        "SELECT operation_id, kind, partition_key FROM operations WHERE state = ? ORDER BY operation_id",
        [S.COMMIT_UNKNOWN.value],
    ).fetchall()
    if rows:
        held = ", ".join(f"{op_id[:16]} ({kind} {key})" for op_id, kind, key in rows)
        raise ReplayError(
            ErrorCode.COMMIT_UNKNOWN,
            f"held by an operator in COMMIT_UNKNOWN: {held}; nothing runs or publishes until it is "
            "marked: `replay-assets recovery plan --operation-id ID`",
        )


def fence_committed(con: duckdb.DuckDBPyConnection, operation_id: str) -> bool:
    return one(con, "SELECT 1 FROM commit_markers WHERE operation_id = ?", [operation_id]) is not None


def write_fence(con: duckdb.DuckDBPyConnection, op: Operation, now: dt.datetime) -> None:
    con.execute(
        "INSERT INTO commit_markers (operation_id, kind, partition_key, input_identity, committed_at) "
        "VALUES (?, ?, ?, ?, ?)",
        [op.operation_id, op.kind, op.partition_key, op.input_identity, now],
    )


Mutation = Callable[[duckdb.DuckDBPyConnection], tuple[dict[str, Any], str | None]]


@contextmanager
def _unheld(warehouse: WarehouseWriter) -> Iterator[duckdb.DuckDBPyConnection]:
    """Each transaction of the executor: refused first while an operator holds an operation, so a
    process that was mid-operation when the hold came stops at its next step."""
    with warehouse.transaction() as con:
        require_no_hold(con)
        yield con


def execute(
    warehouse: WarehouseWriter,
    op: Operation,
    mutate: Mutation,
    evidence: Callable[[], object],
    target_now: Callable[[duckdb.DuckDBPyConnection, Entry], str | None],
    clock: Callable[[], dt.datetime],
    fail_point: str | None,
    actor: str = "pipeline",
    repair: Mutation | None = None,
) -> dict[str, Any]:
    """Run one operation so that any retry (another try, another run id, after SIGKILL anywhere)
    mutates the target at most once and finishes what is missing. Returns the recorded result.

    A COMPLETE operation whose target drifted from its record is not trusted: a repair operation,
    whose identity includes the observed target hash, runs ``repair`` (SPEC 6)."""
    with warehouse.released():  # each step takes the lock for its own transaction (SPEC 6)
        failpoints.hit(fail_point, f"{op.kind}:before_intent")
        with _unheld(warehouse) as con:
            entry = create_or_get(con, op, actor, clock())
            observed = target_now(con, entry) if entry.state is S.COMPLETE else None
            step = next_step(
                entry.state,
                fence_committed(con, op.operation_id),
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
                warehouse,
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
                warehouse, op, entry=entry, mutate=mutate, clock=clock, fail_point=fail_point, actor=actor
            )
        return _complete(warehouse, op, evidence=evidence, clock=clock, fail_point=fail_point, actor=actor)


def _mutate(
    warehouse: WarehouseWriter,
    op: Operation,
    entry: Entry,
    mutate: Mutation,
    clock: Callable[[], dt.datetime],
    fail_point: str | None,
    actor: str,
) -> Entry:
    with _unheld(warehouse) as con:
        entry = get(con, op.operation_id) or entry
        for nxt in _path_to_committing(entry.state):
            entry = cas(con, entry, nxt=nxt, actor=actor, note="ready to mutate", now=clock())
    failpoints.hit(fail_point, f"{op.kind}:after_committing")
    try:
        with _unheld(warehouse) as con:
            result, sha = mutate(con)
            failpoints.hit(fail_point, f"{op.kind}:inside_target")
            return _fence(con, op, actor=actor, clock=clock, result=result, sha=sha)
    except Divert as divert:
        with _unheld(warehouse) as con:
            result, sha = divert.instead(con)
            return _fence(con, op, actor=actor, clock=clock, result=result, sha=sha)


def _path_to_committing(state: CommitState) -> list[CommitState]:
    return {
        S.PREPARING: [S.PREPARED, S.COMMITTING],
        S.PREPARED: [S.COMMITTING],
        S.FAILED_PRE_COMMIT: [S.PREPARING, S.PREPARED, S.COMMITTING],
        S.COMMITTING: [S.PREPARED, S.COMMITTING],  # no fence: provably not committed, retry
    }[state]


def _fence(
    con: duckdb.DuckDBPyConnection,
    op: Operation,
    actor: str,
    clock: Callable[[], dt.datetime],
    result: dict[str, Any],
    sha: str | None,
) -> Entry:
    write_fence(con, op, clock())
    return cas(
        con,
        _reload(con, op.operation_id),
        nxt=S.TARGET_COMMITTED,
        actor=actor,
        note="target committed with its fence",
        now=clock(),
        result=result,
        target_sha256=sha,
    )


def _complete(
    warehouse: WarehouseWriter,
    op: Operation,
    evidence: Callable[[], object],
    clock: Callable[[], dt.datetime],
    fail_point: str | None,
    actor: str,
) -> dict[str, Any]:
    failpoints.hit(fail_point, f"{op.kind}:after_target_commit")
    with _unheld(warehouse) as con:
        entry = _reload(con, op.operation_id)
        if entry.state is S.COMMITTING:  # the fence proved the commit of an interrupted attempt
            entry = cas(
                con,
                entry,
                nxt=S.TARGET_COMMITTED,
                actor=actor,
                note="fence found: the mutation committed",
                now=clock(),
            )
        if entry.state is S.TARGET_COMMITTED:
            entry = cas(
                con, entry, nxt=S.COMMITTED_INCOMPLETE, actor=actor, note="completing evidence", now=clock()
            )
    failpoints.hit(fail_point, f"{op.kind}:before_evidence")
    evidence()
    with _unheld(warehouse) as con:
        entry = _reload(con, op.operation_id)
        if entry.state is S.COMMITTED_INCOMPLETE:
            entry = cas(con, entry, nxt=S.COMPLETE, actor=actor, note="evidence complete", now=clock())
    failpoints.hit(fail_point, f"{op.kind}:after_complete")
    assert entry.result is not None
    return entry.result


IN_DOUBT_COMMITTED = """
    SELECT o.operation_id, o.kind, o.asset, o.partition_key, o.intent_digest, m.input_identity
    FROM operations o JOIN commit_markers m USING (operation_id)
    WHERE o.state IN ('COMMITTING', 'TARGET_COMMITTED', 'COMMITTED_INCOMPLETE') ORDER BY o.created_at"""


def finish_committed(
    warehouse: WarehouseWriter,
    evidence: Callable[[], object],
    clock: Callable[[], dt.datetime],
    fail_point: str | None,
) -> list[str]:
    """Complete the evidence of every operation whose fence proves a commit but whose process died
    before COMPLETE (nothing else would ever ask for them again). Returns their ids."""
    with warehouse.connect() as con:
        require_no_hold(con)
        rows = con.execute(IN_DOUBT_COMMITTED).fetchall()
    finished = []
    for op_id, kind, asset, key, digest, identity in rows:
        _complete(
            warehouse,
            Operation(op_id, digest, kind=kind, asset=asset, partition_key=key, input_identity=identity),
            evidence=evidence,
            clock=clock,
            fail_point=fail_point,
            actor="recovery:run",
        )
        finished.append(str(op_id))
    return finished
