"""COMMIT_UNKNOWN is an operator's hold (docs/recovery.md): `recovery apply --action mark-unknown`
stops every run and every publication before any I/O on the target, and only the mark that agrees
with the fence releases it. End to end through the CLI, after a real SIGKILL of a `run`."""

import json
import os
import shutil
import signal
from pathlib import Path
from typing import Any

import pytest

from replay_assets.core.errors import ReplayError
from replay_assets.demo.scenarios import seed001
from replay_assets.entrypoints.cli import main
from replay_assets.usecases.apply import apply
from replay_assets.usecases.recover import refresh_published
from replay_assets_tests.crash.test_kill_matrix import outcome, seed001_batch, session
from replay_assets_tests.crash.test_random_kills import stderr_of, stopped_run
from replay_assets_tests.helpers import warehouse_fingerprint

DAY = "2026-09-21"  # the load date the killed run was applying


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any], str]:
    """A home just before applying DAY, the outcome of an uninterrupted run, and its published copy."""
    home = tmp_path_factory.mktemp("unknown") / "template"
    seed001_batch(home)
    reference = home.parent / "reference"
    shutil.copytree(home, reference)
    s = session(reference, seed001.NOW)
    assert not s.run().failed
    result = outcome(s)
    s.close()
    return home, result, (reference / "published" / "exported.json").read_text()


@pytest.fixture
def killed(
    template: tuple[Path, dict[str, Any], str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    request: pytest.FixtureRequest,
) -> tuple[Path, str]:
    """A copy of the template whose `run` was SIGKILLed at ``request.param``; the id of DAY's operation."""
    monkeypatch.setenv("REPLAY_ASSETS_NOW", seed001.NOW)
    monkeypatch.delenv("DAGSTER_HOME", raising=False)
    monkeypatch.delenv("REPLAY_ASSETS_FAIL_POINT", raising=False)
    home = tmp_path / "home"
    shutil.copytree(template[0], home)
    s = session(home, seed001.NOW)
    assert s.run_in_subprocess(fail_point=request.param) == -9, f"{request.param} was never reached"
    [op] = s.query(
        "SELECT operation_id FROM operations WHERE kind = 'apply_load_date' AND partition_key = ?", [DAY]
    )
    s.close()
    return home, str(op["operation_id"])


def cli(home: Path, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main([*args, "--home", str(home)])
    out, err = capsys.readouterr()
    return code, out, err


def recovery(home: Path, capsys: pytest.CaptureFixture[str], op: str, *args: str) -> tuple[int, str, str]:
    return cli(home, capsys, "recovery", *args, "--operation-id", op)


def planned(home: Path, capsys: pytest.CaptureFixture[str], op: str) -> dict[str, Any]:
    code, out, _ = recovery(home, capsys, op, "plan", "--json")
    assert code == 0
    return dict(json.loads(out))


def mark(home: Path, capsys: pytest.CaptureFixture[str], op: str, action: str, note: str) -> tuple[int, str]:
    code, out, err = recovery(home, capsys, op, "apply", "--action", action, "--note", note)
    return code, out + err


def assert_held(home: Path, capsys: pytest.CaptureFixture[str], op: str) -> None:
    """While held, `run`, the operation itself and a refresh of the published copy all stop with
    REPLAY_COMMIT_UNKNOWN, and the warehouse and the published copy stay byte for byte the same."""
    s = session(home, seed001.NOW)
    before = warehouse_fingerprint(s.pipeline)
    code, _, err = cli(home, capsys, "run")
    assert code == 1 and "REPLAY_COMMIT_UNKNOWN" in err and op[:16] in err
    with pytest.raises(ReplayError, match="REPLAY_COMMIT_UNKNOWN"):
        apply(s.pipeline, DAY, None)
    with pytest.raises(ReplayError, match="REPLAY_COMMIT_UNKNOWN"):
        refresh_published(s.pipeline)
    assert warehouse_fingerprint(s.pipeline) == before
    s.close()


def _published_text(record: str) -> dict[str, Any]:
    """What the published copy's record says of the data: its marks of the evidence tables
    left out, as a recovered run rightly holds more evidence (its operations, audit, costs)."""
    found: dict[str, Any] = json.loads(record)
    found.pop("evidence", None)
    return found


def _published(path: Path) -> dict[str, Any]:
    return _published_text(path.read_text())


def assert_equals_an_uninterrupted_run(home: Path, template: tuple[Path, dict[str, Any], str]) -> list[Any]:
    """The outcome and the published copy equal the reference's; returns DAY's audit trail."""
    _, reference, exported = template
    s = session(home, seed001.NOW)
    assert outcome(s) == reference
    assert _published(home / "published" / "exported.json") == _published_text(exported)
    audit = s.query(
        """SELECT a.actor, a.from_state, a.to_state
        FROM operation_audit a JOIN operations o USING (operation_id)
        WHERE o.kind = 'apply_load_date' AND o.partition_key = ? ORDER BY a.version""",
        [DAY],
    )
    s.close()
    return [(a["actor"], a["from_state"], a["to_state"]) for a in audit]


@pytest.mark.parametrize("killed", ["apply_load_date:before_evidence"], indirect=True)
def test_a_held_operation_whose_fence_is_present_is_released_by_mark_committed(
    killed: tuple[Path, str],
    template: tuple[Path, dict[str, Any], str],
    capsys: pytest.CaptureFixture[str],
) -> None:
    home, op = killed
    plan = planned(home, capsys, op)
    assert plan["state"] == "COMMITTED_INCOMPLETE" and plan["fence"] is True
    assert plan["actions"] == ["complete-evidence", "mark-unknown"]
    assert mark(home, capsys, op, "mark-unknown", "warehouse restored from the 02:00 backup")[0] == 0

    assert_held(home, capsys, op)
    assert planned(home, capsys, op)["actions"] == ["mark-committed"]
    code, text = mark(home, capsys, op, "mark-not-committed", "contradicts the fence")
    assert code == 1 and "REPLAY_RECOVERY_CONFLICT" in text
    code, text = mark(home, capsys, op, "mark-committed", "target checked: the CDC batch is in history")
    assert code == 0 and "is COMPLETE" in text

    assert cli(home, capsys, "run")[0] == 0
    audit = assert_equals_an_uninterrupted_run(home, template)
    operator = [step for step in audit if step[0].startswith("operator:")]
    assert [(f, t) for _, f, t in operator] == [
        ("COMMITTED_INCOMPLETE", "COMMIT_UNKNOWN"),
        ("COMMIT_UNKNOWN", "TARGET_COMMITTED"),
        ("TARGET_COMMITTED", "COMMITTED_INCOMPLETE"),
        ("COMMITTED_INCOMPLETE", "COMPLETE"),
    ]
    assert [to for _, _, to in audit].count("COMPLETE") == 1


@pytest.mark.parametrize("killed", ["apply_load_date:after_committing"], indirect=True)
def test_a_held_operation_without_its_fence_is_released_by_mark_not_committed(
    killed: tuple[Path, str],
    template: tuple[Path, dict[str, Any], str],
    capsys: pytest.CaptureFixture[str],
) -> None:
    home, op = killed
    plan = planned(home, capsys, op)
    assert plan["state"] == "COMMITTING" and plan["fence"] is False
    assert plan["actions"] == ["retry", "mark-unknown"]
    assert mark(home, capsys, op, "mark-unknown", "killed during a deploy that is being rolled back")[0] == 0

    assert_held(home, capsys, op)
    assert planned(home, capsys, op)["actions"] == ["mark-not-committed"]
    code, text = mark(home, capsys, op, "mark-committed", "contradicts the fence")
    assert code == 1 and "REPLAY_RECOVERY_CONFLICT" in text
    code, text = mark(home, capsys, op, "mark-not-committed", "rollback done; apply it again")
    assert code == 0 and "is FAILED_PRE_COMMIT" in text

    assert cli(home, capsys, "run")[0] == 0
    audit = assert_equals_an_uninterrupted_run(home, template)
    operator = [(f, t) for actor, f, t in audit if actor.startswith("operator:")]
    assert operator == [
        ("COMMITTING", "COMMIT_UNKNOWN"),
        ("COMMIT_UNKNOWN", "PREPARED"),
        ("PREPARED", "FAILED_PRE_COMMIT"),
    ]
    mutations = [step for step in audit if step[2] == "TARGET_COMMITTED"]
    assert len(mutations) == 1 and mutations[0][0] == "pipeline"  # the mutation ran once, after the mark


@pytest.mark.parametrize(
    ("point", "state", "release", "released"),
    [
        ("apply_load_date:after_committing", "COMMITTING", "mark-not-committed", "FAILED_PRE_COMMIT"),
        ("apply_load_date:before_evidence", "COMMITTED_INCOMPLETE", "mark-committed", "COMPLETE"),
    ],
)
def test_a_hold_stops_a_run_that_is_mid_operation_at_its_next_step(
    template: tuple[Path, dict[str, Any], str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    point: str,
    state: str,
    release: str,
    released: str,
) -> None:
    """The child `run` stops itself between two steps of DAY's operation; the operator holds the
    operation; the child, resumed, must not mutate, fence or publish it."""
    monkeypatch.setenv("REPLAY_ASSETS_NOW", seed001.NOW)
    monkeypatch.delenv("DAGSTER_HOME", raising=False)
    monkeypatch.delenv("REPLAY_ASSETS_FAIL_POINT", raising=False)
    home = tmp_path / "home"
    shutil.copytree(template[0], home)
    child = stopped_run(home, point)
    s = session(home, seed001.NOW)
    [op] = s.query("SELECT operation_id, state FROM operations WHERE partition_key = ?", [DAY])
    s.close()
    assert op["state"] == state
    op_id = str(op["operation_id"])
    published = (home / "published" / "exported.json").read_text()
    assert mark(home, capsys, op_id, "mark-unknown", "hold while the deploy is rolled back")[0] == 0
    os.killpg(child.pid, signal.SIGCONT)
    assert child.wait() == 1 and "REPLAY_COMMIT_UNKNOWN" in stderr_of(home)

    s = session(home, seed001.NOW)
    [after] = s.query(
        "SELECT o.state, count(m.operation_id) AS fences FROM operations o "
        "LEFT JOIN commit_markers m USING (operation_id) WHERE o.operation_id = ? GROUP BY o.state",
        [op_id],
    )
    history = s.query("SELECT count(*) AS n FROM order_history WHERE load_date = ?", [DAY])[0]["n"]
    s.close()
    assert after == {"state": "COMMIT_UNKNOWN", "fences": int(state == "COMMITTED_INCOMPLETE")}
    assert (history > 0) is (state == "COMMITTED_INCOMPLETE")  # the resumed child mutated nothing
    assert (home / "published" / "exported.json").read_text() == published
    code, text = mark(home, capsys, op_id, release, "checked")
    assert code == 0 and f"is {released}" in text
    assert cli(home, capsys, "run")[0] == 0
    assert_equals_an_uninterrupted_run(home, template)
