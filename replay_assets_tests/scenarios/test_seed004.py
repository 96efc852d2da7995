"""Seed 004 as the demo runs it (SPEC 6, 8): a worker killed at a journal transition and
recovered by inspect/plan/apply, an operator's hold that nothing auto-succeeds past, two workers
and one mutation, a reused operation id refused before any I/O."""

from pathlib import Path
from typing import Any

import pytest

from replay_assets.demo.seed004 import seed004_demo


@pytest.fixture(scope="module")
def figures(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    lines: list[str] = []
    found = seed004_demo(Path(tmp_path_factory.mktemp("seed004")) / "home", lines.append)
    return {**found, "printed": lines}


def test_a_kill_after_the_commit_is_finished_by_the_operator_and_applied_once(
    figures: dict[str, Any],
) -> None:
    killed = figures["killed"]
    assert killed["exit"] == -9
    assert killed["in_doubt"] == [("2026-09-21", "TARGET_COMMITTED")]
    assert killed["plan"]["fence"] and killed["plan"]["actions"] == ["complete-evidence", "mark-unknown"]
    assert killed["recovered"] == "COMPLETE" and killed["fences"] == 1 and killed["rerun"] == "APPLIED"
    assert killed["audit"] == [
        "pipeline: PREPARING -> PREPARED -> COMMITTING -> TARGET_COMMITTED",
        "operator:demo: COMMITTED_INCOMPLETE -> COMPLETE",
    ]


def test_an_unknown_outcome_never_succeeds_on_its_own(figures: dict[str, Any]) -> None:
    held = figures["held"]
    assert held["exit"] == -9 and held["held"] == "COMMIT_UNKNOWN"
    assert held["run_while_held"] == "REPLAY_COMMIT_UNKNOWN"
    assert held["mark_committed"] == "refused: REPLAY_RECOVERY_CONFLICT"  # the fence says otherwise
    assert held["mark_not_committed"] == "FAILED_PRE_COMMIT"
    assert held["after"] == "APPLIED" and held["fences"] == 1
    assert held["audit"][:2] == [
        "pipeline: PREPARING -> PREPARED -> COMMITTING",
        "operator:demo: COMMIT_UNKNOWN -> PREPARED -> FAILED_PRE_COMMIT",
    ]


def test_two_workers_make_one_mutation(figures: dict[str, Any]) -> None:
    """One fence and one commit of the target, whichever way the two workers interleave: a worker
    that finds the entry COMMITTING without its fence (the other is mid-mutation) takes the
    journal's retry of a step provably not committed (COMMITTING -> PREPARED -> COMMITTING), then
    loses the fence and reports what the winner recorded."""
    raced = figures["raced"]
    assert raced["results"] == ["APPLIED", "APPLIED"] and raced["fences"] == 1
    done = "TARGET_COMMITTED -> COMMITTED_INCOMPLETE -> COMPLETE"
    one_after_the_other = f"PREPARING -> PREPARED -> COMMITTING -> {done}"
    interleaved = f"PREPARING -> PREPARED -> COMMITTING -> PREPARED -> COMMITTING -> {done}"
    assert raced["audit"] in ([f"pipeline: {one_after_the_other}"], [f"pipeline: {interleaved}"])


def test_a_reused_operation_id_is_refused_before_any_io(figures: dict[str, Any]) -> None:
    assert figures["conflict"] == {
        "code": "REPLAY_COMMIT_INTENT_CONFLICT",
        "touched": [],
        "journal_unchanged": True,
    }


def test_the_demo_prints_the_journal_evidence(figures: dict[str, Any]) -> None:
    text = "\n".join(figures["printed"])
    assert text.startswith("seed 004 — the operation journal")
    assert "operator:demo: COMMITTED_INCOMPLETE -> COMPLETE" in text
    assert "apply while held: REPLAY_COMMIT_UNKNOWN" in text
