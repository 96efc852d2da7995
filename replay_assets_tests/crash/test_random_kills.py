"""Kill the whole `replay-assets run` process group at seeded instants of a run of three operations
(two load dates, then one aggregate publication), then rerun: the outcome equals an uninterrupted
run, nothing is left STARTED.

An instant is a journal point and the operation reaching it, drawn with a seeded RNG from every
point where an operation is in flight. The child stops itself there (fail point
``stop:<point>#<n>``: SIGSTOP at the n-th time the process reaches it); the test sees it stopped
(``waitpid``, no sleep, no polling) and SIGKILLs the group from outside. Each case asserts that its
kill landed: the child was alive and died of SIGKILL, its Dagster run was left STARTED, and the
journal holds the operation in the in-flight state of that point, with or without its fence."""

import os
import random
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any, NamedTuple

import dagster as dg
import pytest

from replay_assets.demo.scenarios import seed001
from replay_assets.storage.db.sql import DuckDBSql
from replay_assets.storage.journal.written_once import JournalReading
from replay_assets_tests.crash.test_kill_matrix import outcome, session

# the operations of the run, in order; the n-th of a kind reaches each of its points the n-th time
OPERATIONS = [
    ("apply_load_date", "2026-09-20"),
    ("apply_load_date", "2026-09-21"),
    ("publish_aggregates", "2026-09-17..2026-09-21"),
]
# point -> the journal state a kill there leaves, and whether the fence is in the target
IN_FLIGHT = {
    "{kind}:after_intent": ("PREPARING", False),
    "{kind}:after_committing": ("COMMITTING", False),
    "apply.before_commit": ("COMMITTING", False),  # inside the target transaction, loads only
    "{kind}:inside_target": ("COMMITTING", False),
    "{kind}:after_target_commit": ("TARGET_COMMITTED", True),
    "{kind}:before_evidence": ("COMMITTED_INCOMPLETE", True),
}


class Instant(NamedTuple):
    point: str
    nth: int
    kind: str
    partition_key: str
    state: str
    fence: bool

    def __str__(self) -> str:
        return f"{self.point}#{self.nth}"


def instants() -> list[Instant]:
    out = []
    for i, (kind, key) in enumerate(OPERATIONS):
        nth = 1 + sum(1 for k, _ in OPERATIONS[:i] if k == kind)
        for template, (state, fence) in IN_FLIGHT.items():
            if template.startswith("apply.") and kind != "apply_load_date":
                continue
            out.append(Instant(template.format(kind=kind), nth, kind, key, state, fence))
    return out


INSTANTS = random.Random(20260921).sample(instants(), 5)


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, object]]:
    home = tmp_path_factory.mktemp("random") / "template"
    seed001.deliver_baseline(home / "landing")
    seed001.deliver_cdc(home / "landing", "B20260921-CDC-A", "2026-09-21", "2026-09-21T08:12:00Z")
    reference = home.parent / "reference"
    shutil.copytree(home, reference)
    s = session(reference, seed001.NOW)
    assert not s.run().failed
    ops = s.query("SELECT kind, partition_key FROM operations ORDER BY kind, partition_key")
    assert [(o["kind"], o["partition_key"]) for o in ops] == sorted(OPERATIONS)
    result = outcome(s)
    s.close()
    return home, result


def stopped_run(home: Path, fail_point: str) -> subprocess.Popen[bytes]:
    """`replay-assets run` in its own process group, returned once it has stopped itself at
    ``fail_point`` (``<point>[#<n>]``); fails if it ends without reaching it. Its stderr goes to
    ``home/run.stderr`` (a file: a full pipe could block the child before it stops)."""
    env = {
        **os.environ,
        "REPLAY_ASSETS_HOME": str(home),
        "REPLAY_ASSETS_NOW": seed001.NOW,
        "DAGSTER_HOME": str(home / "dagster"),
        "REPLAY_ASSETS_FAIL_POINT": f"stop:{fail_point}",
    }
    with open(home / "run.stderr", "wb") as stderr:
        child = subprocess.Popen(
            [sys.executable, "-m", "replay_assets.entrypoints.cli", "run", "--home", str(home)],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            start_new_session=True,
        )
    _, status = os.waitpid(child.pid, os.WUNTRACED)
    if not os.WIFSTOPPED(status):
        child.returncode = os.waitstatus_to_exitcode(status)
        raise AssertionError(f"run ended ({child.returncode}) before {fail_point}: {stderr_of(home)}")
    return child


def stderr_of(home: Path) -> str:
    return (home / "run.stderr").read_text(errors="replace")


def kill_at(home: Path, instant: Instant) -> int:
    """SIGKILL the process group of a run stopped at the instant; returns the child's return code."""
    child = stopped_run(home, str(instant))
    os.killpg(child.pid, signal.SIGKILL)
    return child.wait()


def in_flight(home: Path, instant: Instant) -> dict[str, Any]:
    """What the kill left: Dagster runs still STARTED, and the operation's state and fence."""
    s = session(home, seed001.NOW)
    started = s.instance.get_runs(filters=dg.RunsFilter(statuses=[dg.DagsterRunStatus.STARTED]))
    [op] = s.query(
        "SELECT operation_id, state FROM operations WHERE kind = ? AND partition_key = ?",
        [instant.kind, instant.partition_key],
    )
    with s.pipeline.warehouse.connect() as con:
        fence = JournalReading(DuckDBSql(con)).fence_committed(str(op["operation_id"]))
    s.close()
    return {"started_runs": len(started), "state": op["state"], "fence": fence}


@pytest.mark.parametrize("instant", INSTANTS, ids=str)
def test_a_killed_process_group_then_a_rerun_equals_an_uninterrupted_run(
    template: tuple[Path, dict[str, object]], tmp_path: Path, instant: Instant
) -> None:
    source, reference = template
    home = tmp_path / "home"
    shutil.copytree(source, home)
    assert kill_at(home, instant) == -signal.SIGKILL
    assert in_flight(home, instant) == {"started_runs": 1, "state": instant.state, "fence": instant.fence}
    s = session(home, seed001.NOW)
    assert s.run().orphans_failed == 1
    assert not s.instance.get_runs(filters=dg.RunsFilter(statuses=[dg.DagsterRunStatus.STARTED]))
    assert outcome(s) == reference
    s.close()
