"""The journal's kill matrix on every store: a process running an operation is SIGKILLed at each
point of the executor (``storage/journal/executor.py``), then the operation runs again. Whatever
the point, the mutation is visible after the kill only if its fence committed, and exactly once
after the retry, which completes the operation. Real child processes; on Spark, they connect to
the tests' Sail server."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from replay_assets.core.status import CommitState
from replay_assets_tests import journal_child
from replay_assets_tests.journal_operation import KIND, execute, mutations, operation
from replay_assets_tests.stores import STORES, Opened, open_store

# each point of the executor, and whether the fence has committed when a kill there happens
POINTS = {
    "before_intent": False,
    "after_intent": False,
    "after_committing": False,
    "inside_target": False,
    "after_target_commit": True,
    "before_evidence": True,
    "after_complete": True,
}
CASES = [
    pytest.param(kind, point, id=f"{kind}-{point}", marks=[pytest.mark.slow] if kind != "duckdb" else [])
    for kind in STORES
    for point in POINTS
]


@pytest.fixture
def opened(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Opened]:
    with open_store(request, request.node.callspec.params["kind"], tmp_path) as found:
        yield found


@pytest.mark.parametrize(("kind", "point"), CASES)
def test_a_kill_at_any_journal_point_leaves_one_mutation_after_the_retry(
    opened: Opened, kind: str, point: str
) -> None:
    child = subprocess.run(
        [sys.executable, journal_child.__file__, kind, str(opened.root), opened.remote, f"{KIND}:{point}"],
        check=False,
        timeout=300,
    )
    assert child.returncode == -signal.SIGKILL  # the child reached the point
    committed = POINTS[point]
    assert mutations(opened.store) == (["MUTATED"] if committed else [])
    with opened.store.read() as unit:
        assert unit.journal.fence_committed(operation().operation_id) is committed
    assert execute(opened.store) == {"mutated": True}
    assert mutations(opened.store) == ["MUTATED"]
    with opened.store.read() as unit:
        entry = unit.journal.journal_entry(operation().operation_id)
    assert entry is not None and entry.state is CommitState.COMPLETE


@pytest.mark.parametrize(
    "kind", [pytest.param(k, marks=[pytest.mark.slow] if k != "duckdb" else []) for k in STORES]
)
def test_a_worker_that_decided_to_mutate_finds_the_commit_of_another_and_only_completes(
    opened: Opened, kind: str
) -> None:
    """Two workers of one operation: the child decides to mutate (no fence yet) and stops there;
    the other worker runs the whole operation; the child, resumed, finds the fence in its next
    step, mutates nothing and finishes with the recorded result (it once died on the state it
    had not expected)."""
    stop = f"stop:{KIND}:after_intent"
    args = [kind, str(opened.root), opened.remote, stop]
    child = subprocess.Popen([sys.executable, journal_child.__file__, *args])
    try:
        _, status = os.waitpid(child.pid, os.WUNTRACED)
        assert os.WIFSTOPPED(status)  # the child decided, and committed nothing
        assert mutations(opened.store) == []
        assert execute(opened.store) == {"mutated": True}
    finally:
        os.kill(child.pid, signal.SIGCONT)
    assert child.wait(timeout=300) == 0
    assert mutations(opened.store) == ["MUTATED"]
    with opened.store.read() as unit:
        entry = unit.journal.journal_entry(operation().operation_id)
    assert entry is not None and entry.state is CommitState.COMPLETE
