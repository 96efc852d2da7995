"""The kill matrix (seed 004): SIGKILL at every journal transition and inside the target
transaction, for three operations; a normal rerun (and `recovery apply`) must end exactly where an
uninterrupted run ends, with each operation's target mutation done exactly once. The CDC batch's
apply points run on Dagster's PostgreSQL instance (``test_kill_matrix_postgres.py``), the others
on the embedded one."""

import shutil
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import dagster as dg
import pytest

from replay_assets.demo.scenarios import seed000, seed001, seed002
from replay_assets.entrypoints.session import Session
from replay_assets.storage.db import segments
from replay_assets.storage.journal import recovery
from replay_assets.usecases.apply import apply
from replay_assets.usecases.land import land
from replay_assets.usecases.recover import refresh_published
from replay_assets_tests.helpers import settings_for

JOURNAL_POINTS = [
    "before_intent",
    "after_intent",
    "after_committing",
    "inside_target",
    "after_target_commit",
    "before_evidence",
    "after_complete",
]
APPLY_POINTS = [f"apply_load_date:{p}" for p in JOURNAL_POINTS] + [
    "land.before_commit",
    "apply.before_commit",
    "apply.after_commit",
    "state.after_commit",
]
PUBLISH_POINTS = [f"publish_aggregates:{p}" for p in JOURNAL_POINTS]


def session(home: Path, now: str) -> Session:
    return Session(settings_for(home, now), home / "dagster")


Opener = Callable[[Path, str], Session]


def seed000_move(home: Path, open_session: Opener = session) -> str:
    s = open_session(home, seed000.NOW)
    seed000.deliver(s.settings.landing, "initial")
    s.run()
    s.close()
    seed000.deliver(s.settings.landing, "corrections")  # a moves north/01-01 -> south/01-02
    return seed000.NOW


def seed001_batch(home: Path) -> str:
    s = session(home, seed001.NOW)
    seed001.deliver_baseline(s.settings.landing)
    s.run()
    s.close()
    seed001.deliver_cdc(s.settings.landing, "B20260921-CDC-A", "2026-09-21", "2026-09-21T08:12:00Z")
    return seed001.NOW


def late_restatement_publish(home: Path, open_session: Opener = session) -> str:
    s = open_session(home, seed002.NOW)
    seed002.deliver_shuffled(s.settings.landing)
    s.run()
    seed002.deliver_replay_and_late(s.settings.landing)
    land(s.pipeline, seed002.LATE_DAY)
    apply(s.pipeline, seed002.LATE_DAY, None)  # certified; its restatement of 2026-10-01 is queued
    s.close()
    return seed002.NOW


SCENARIOS: dict[str, tuple[Callable[[Path], str], list[str]]] = {
    "seed000_move": (seed000_move, APPLY_POINTS),
    # its apply points run on the PostgreSQL instance (test_kill_matrix_postgres.py); here it is
    # the recovery test's template
    "seed001_batch": (seed001_batch, []),
    "late_restatement_publish": (late_restatement_publish, PUBLISH_POINTS),
}


def outcome(s: Session) -> dict[str, Any]:
    return {
        "publications": s.query(
            "SELECT asset, partition_key, version, content_sha256 FROM publications ORDER BY ALL"
        ),
        "snapshots": s.query("SELECT load_date, content_sha256 FROM snapshots ORDER BY ALL"),
        "fences": s.query("SELECT operation_id FROM commit_markers ORDER BY ALL"),
        "operations": s.query("SELECT operation_id, state FROM operations ORDER BY ALL"),
        "aggregates": s.query("SELECT * EXCLUDE (certified_at) FROM daily_aggregates ORDER BY ALL"),
        "queue": s.query("SELECT count(*) AS n FROM restatement_queue WHERE released_at IS NULL"),
    }


@pytest.fixture(scope="module")
def prepared(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, str, dict[str, Any]]]:
    """Per scenario: a template home just before the operation, and the uninterrupted outcome."""
    out = {}
    for name, (build, _) in SCENARIOS.items():
        template = tmp_path_factory.mktemp(name) / "template"
        now = build(template)
        reference = tmp_path_factory.mktemp(name) / "reference"
        shutil.copytree(template, reference)
        s = session(reference, now)
        assert not s.run().failed
        out[name] = (template, now, outcome(s))
        s.close()
    return out


CASES = [(name, point) for name, (_, points) in SCENARIOS.items() for point in points]


@pytest.fixture(scope="module")
def killed(
    prepared: dict[str, tuple[Path, str, dict[str, Any]]], tmp_path_factory: pytest.TempPathFactory
) -> dict[tuple[str, str], tuple[Path, int]]:
    """Every case killed in a child process; two at a time (separate homes share nothing)."""
    root = tmp_path_factory.mktemp("killed")

    def kill(case: tuple[str, str]) -> tuple[tuple[str, str], tuple[Path, int]]:
        name, point = case
        template, now, _ = prepared[name]
        home = root / f"{name}-{point.replace(':', '-').replace('.', '-')}"
        shutil.copytree(template, home)
        return case, (home, session(home, now).run_in_subprocess(fail_point=point))

    with ThreadPoolExecutor(max_workers=2) as pool:
        return dict(pool.map(kill, CASES))


@pytest.mark.parametrize(("scenario", "point"), CASES)
def test_kill_then_rerun_equals_an_uninterrupted_run(
    prepared: dict[str, tuple[Path, str, dict[str, Any]]],
    killed: dict[tuple[str, str], tuple[Path, int]],
    scenario: str,
    point: str,
) -> None:
    home, code = killed[(scenario, point)]
    assert code == -9, f"the fail point {point} was never reached"
    _, now, reference = prepared[scenario]
    s = session(home, now)
    summary = s.run()
    assert summary.orphans_failed >= 1  # the killed run was left STARTED; its slots are freed
    assert not s.instance.get_runs(filters=dg.RunsFilter(statuses=[dg.DagsterRunStatus.STARTED]))
    assert outcome(s) == reference
    s.close()


def test_recovery_apply_completes_an_operation_killed_before_its_evidence(
    prepared: dict[str, tuple[Path, str, dict[str, Any]]], tmp_path: Path
) -> None:
    template, now, reference = prepared["seed001_batch"]
    home = tmp_path / "home"
    shutil.copytree(template, home)
    s = session(home, now)
    assert s.run_in_subprocess(fail_point="apply_load_date:before_evidence") == -9
    with s.pipeline.store.read() as unit:
        [doubt] = recovery.in_doubt(unit)
        planned = recovery.plan(unit, doubt["operation_id"])
    assert doubt["state"] == "COMMITTED_INCOMPLETE" and planned.fence
    assert planned.actions == [recovery.Action.COMPLETE_EVIDENCE, recovery.Action.MARK_UNKNOWN]
    entry = recovery.apply(
        s.pipeline.store,
        doubt["operation_id"],
        recovery.Action.COMPLETE_EVIDENCE,
        "killed before evidence",
        "tester",
        lambda: refresh_published(s.pipeline),
        s.pipeline.now(),
    )
    assert entry.state == "COMPLETE"
    with pytest.raises(Exception, match="REPLAY_RECOVERY_CONFLICT"):  # nothing is planned any more
        recovery.apply(
            s.pipeline.store,
            doubt["operation_id"],
            recovery.Action.COMPLETE_EVIDENCE,
            "again",
            "tester",
            lambda: refresh_published(s.pipeline),
            s.pipeline.now(),
        )
    s.run()
    assert outcome(s) == reference
    audit = s.query(
        "SELECT actor, to_state FROM operation_audit WHERE operation_id = ? ORDER BY version",
        [doubt["operation_id"]],
    )
    assert audit[-1] == {"actor": "operator:tester", "to_state": "COMPLETE"}
    s.close()


def test_a_landing_killed_before_its_commit_leaves_files_no_one_reads_and_the_rerun_removes(
    prepared: dict[str, tuple[Path, str, dict[str, Any]]], tmp_path: Path
) -> None:
    """SIGKILL after the landing moved its segment files into the home and before its commit:
    no register row names them, so nothing reads them; the rerun's first writer removes them
    and lands the batch again, ending where an uninterrupted run ends."""
    template, now, reference = prepared["seed000_move"]
    home = tmp_path / "home"
    shutil.copytree(template, home)
    before = _segment_files(home)
    s = session(home, now)
    assert s.run_in_subprocess(fail_point="land.before_commit") == -9
    left = _segment_files(home) - before
    assert left  # moved, never registered
    with s.pipeline.reader.read() as con:  # the read-only port never removes a file
        assert {str(r[0]) for r in con.execute("SELECT path FROM landing_segments").fetchall()} == before
    s.run()
    assert outcome(s) == reference
    with s.pipeline.reader.read() as con:
        registered = {str(r[0]) for r in con.execute("SELECT path FROM landing_segments").fetchall()}
    assert _segment_files(home) == registered and not left & registered
    s.close()


def _segment_files(home: Path) -> set[str]:
    base = home / segments.FOLDER
    return {str(f.relative_to(base)) for kind in segments.KINDS for f in (base / kind.folder).glob("*/*")}
