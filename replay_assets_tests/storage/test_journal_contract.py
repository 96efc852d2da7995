"""The operation journal's contract (SPEC 6) on every adapter of the warehouse's store: the one
executor (``storage/journal/executor.py``) over DuckDB and over Delta on a real Sail server.

Each mutation appends a step-attempt row, so a second mutation would show as a second row:
"exactly one mutation" is counted, never assumed. The kill matrix at every journal point, in
child processes killed with SIGKILL, is in ``test_journal_kills.py``."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from replay_assets.core.errors import ErrorCode, ReplayError
from replay_assets.core.status import CommitState
from replay_assets.storage.journal import executor as journal
from replay_assets.storage.journal.entries import Divert, Operation
from replay_assets_tests.journal_operation import NOW, mark, mutations, operation
from replay_assets_tests.journal_operation import execute as run_operation
from replay_assets_tests.stores import STORES, Opened, open_store

S = CommitState


@pytest.fixture(params=STORES)
def opened(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Opened]:
    with open_store(request, request.param, tmp_path) as found:
        yield found


def _execute(opened: Opened, op: Operation | None = None, **kwargs: Any) -> dict[str, Any]:
    return run_operation(opened.store, op, **kwargs)


def _mutations(opened: Opened) -> list[str]:
    return mutations(opened.store)


def _entry(opened: Opened, op: Operation) -> Any:
    with opened.store.read() as unit:
        return unit.journal.journal_entry(op.operation_id), unit.journal.fence_committed(op.operation_id)


def test_an_operation_mutates_once_and_a_retry_returns_its_record(opened: Opened) -> None:
    calls: list[str] = []
    assert _execute(opened, calls=calls) == {"mutated": True}
    assert _execute(opened, calls=calls) == {"mutated": True}
    assert calls == ["mutate"]
    assert _mutations(opened) == ["MUTATED"]
    entry, fenced = _entry(opened, operation())
    assert (entry.state, entry.target_sha256, fenced) == (S.COMPLETE, "target-1", True)


def test_another_intent_under_the_same_id_is_refused_before_anything_runs(opened: Opened) -> None:
    _execute(opened)
    calls: list[str] = []
    with pytest.raises(ReplayError) as refused:
        _execute(opened, operation(intent=2), calls=calls)
    assert refused.value.code is ErrorCode.COMMIT_INTENT_CONFLICT
    assert calls == []
    assert _mutations(opened) == ["MUTATED"]


def test_a_mutation_that_raises_leaves_nothing_and_the_retry_mutates_once(opened: Opened) -> None:
    def broken(unit: Any) -> tuple[dict[str, Any], str | None]:
        mark(unit, "HALF")
        raise RuntimeError("the step failed after its first write")

    with pytest.raises(RuntimeError):
        _execute(opened, mutate=broken)
    entry, fenced = _entry(opened, operation())
    assert (entry.state, fenced) == (S.COMMITTING, False)
    assert _mutations(opened) == []
    assert _execute(opened) == {"mutated": True}
    assert _mutations(opened) == ["MUTATED"]


def test_a_diverted_mutation_keeps_only_what_replaced_it(opened: Opened) -> None:
    def instead(unit: Any) -> tuple[dict[str, Any], str | None]:
        mark(unit, "DIVERTED")
        return {"diverted": True}, None

    def diverting(unit: Any) -> tuple[dict[str, Any], str | None]:
        mark(unit, "MUTATED")
        raise Divert(instead)

    assert _execute(opened, mutate=diverting) == {"diverted": True}
    assert _mutations(opened) == ["DIVERTED"]
    entry, fenced = _entry(opened, operation())
    assert (entry.state, entry.result, fenced) == (S.COMPLETE, {"diverted": True}, True)


def test_failed_evidence_leaves_a_committed_operation_that_recovery_completes_once(opened: Opened) -> None:
    def failing() -> None:
        raise RuntimeError("the published copy could not be written")

    with pytest.raises(RuntimeError):
        _execute(opened, evidence=failing)
    entry, fenced = _entry(opened, operation())
    assert (entry.state, fenced) == (S.COMMITTED_INCOMPLETE, True)
    finished: list[str] = []
    done = journal.finish_committed(opened.store, lambda: finished.append("evidence"), lambda: NOW, None)
    assert done == [operation().operation_id]
    assert finished == ["evidence"]
    assert _entry(opened, operation())[0].state is S.COMPLETE
    assert _mutations(opened) == ["MUTATED"]


def test_an_operator_hold_stops_every_operation(opened: Opened) -> None:
    held = operation("held")
    with opened.store.transaction() as unit:
        entry = unit.journal.create_or_get_entry(held, "pipeline", NOW)
        for nxt in (S.PREPARED, S.COMMITTING, S.COMMIT_UNKNOWN):
            entry = unit.journal.cas_entry(entry, nxt=nxt, actor="operator", note="hold", now=NOW)
    calls: list[str] = []
    with pytest.raises(ReplayError) as refused:
        _execute(opened, calls=calls)
    assert refused.value.code is ErrorCode.COMMIT_UNKNOWN
    assert calls == []


def test_a_compare_and_set_from_a_stale_entry_is_refused(opened: Opened) -> None:
    with opened.store.transaction() as unit:
        stale = unit.journal.create_or_get_entry(operation(), "pipeline", NOW)
        unit.journal.cas_entry(stale, nxt=S.PREPARED, actor="first", note="moved", now=NOW)
    with pytest.raises(ReplayError) as refused, opened.store.transaction() as unit:
        unit.journal.cas_entry(stale, nxt=S.PREPARED, actor="second", note="stale", now=NOW)
    assert refused.value.code is ErrorCode.RECOVERY_CONFLICT
    assert _entry(opened, operation())[0].version == 2


def test_two_workers_of_one_operation_mutate_once(opened: Opened, tmp_path: Path) -> None:
    """Both start at once, each on its own store (its own session on Spark); whichever loses a
    step is refused, and a retry afterwards finds the one result."""
    barrier = threading.Barrier(2)
    outcomes: list[str] = []

    def worker(store: Opened) -> None:
        barrier.wait()
        try:
            _execute(store)
            outcomes.append("done")
        except ReplayError as refused:
            outcomes.append(str(refused.code))

    second = opened.again()
    threads = [threading.Thread(target=worker, args=(s,)) for s in (opened, second)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    losing = {str(ErrorCode.WAREHOUSE_BUSY), str(ErrorCode.RECOVERY_CONFLICT)}
    assert len(outcomes) == 2 and set(outcomes) <= {"done"} | losing, outcomes
    assert _execute(opened) == {"mutated": True}
    assert _mutations(opened) == ["MUTATED"]


def test_a_second_fence_of_one_operation_is_a_conflict(opened: Opened) -> None:
    """What the loser of two workers meets when the winner's fence committed between its steps:
    a refusal it can report, never a driver's key error (DuckDB keys the fence; Delta has no
    key: both read the fence first)."""
    op = operation()
    with opened.store.transaction() as unit:
        unit.journal.write_fence(op, NOW)
    with pytest.raises(ReplayError) as refused, opened.store.transaction() as unit:
        unit.journal.write_fence(op, NOW)
    assert refused.value.code is ErrorCode.RECOVERY_CONFLICT
    with opened.store.read() as unit:
        assert unit.journal.fence_committed(op.operation_id)
