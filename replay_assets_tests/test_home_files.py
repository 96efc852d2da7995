"""The home's own files (SPEC 10, hostile input, v4): ``replay-assets ui`` writes its sample only
into an empty home; ``in_progress.json`` and ``clock.json`` are read like deliveries (regular
files only, bounded, non-blocking) and a note whose owner is gone is dropped; and the command
line's own output: a closed pipe ends a command quietly, and the refusal of an as-of read
behind the horizon reads correctly.

Commands run in-process (``main``) on a temporary home, except where a hang or the process's
own exit is the defect: those run ``replay-assets`` as a child process with a timeout.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from replay_assets.core.manifest import parse_instant
from replay_assets.entrypoints.cli import main
from replay_assets.storage.db.warehouse import Warehouse
from replay_assets.storage.home import in_progress
from replay_assets.usecases.context import Pipeline
from replay_assets_tests.helpers import drive, settings_for
from replay_assets_tests.storage.test_bad_input import D1, D2, NOW, deliver, event
from replay_assets_tests.storage.test_retention import pruned  # noqa: F401 (a fixture)
from replay_assets_tests.test_hostile_input import sandbox  # noqa: F401 (a fixture)

CLI = [sys.executable, "-m", "replay_assets.entrypoints.cli"]
HANG_GUARD_SECONDS = 120  # a guard against the defect (a hang), not a timing assertion


@pytest.fixture
def home(sandbox: Path) -> Path:  # noqa: F811 (the fixture imported above)
    return sandbox / "home"


def tree(root: Path) -> dict[str, bytes | str]:
    """Every name under ``root`` with the content of its regular files: what a test compares."""
    found: dict[str, bytes | str] = {}
    for path in sorted(root.rglob("*")):
        name = str(path.relative_to(root))
        found[name] = path.read_bytes() if path.is_file() and not path.is_symlink() else "<not a file>"
    return found


def child(home: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "REPLAY_ASSETS_NOW": NOW, "DAGSTER_HOME": str(home / "dagster")}
    return subprocess.run(
        [*CLI, *argv, "--home", str(home)],
        env=env,
        capture_output=True,
        text=True,
        timeout=HANG_GUARD_SECONDS,
    )


# --------------------------------------------------------------------------- ui: an empty home only


def _settings_file(home: Path) -> str:
    (home / "replay-assets.json").write_text('{"lock_timeout_seconds": 7}')
    return "replay-assets.json"


def _warehouse(home: Path) -> str:
    with Warehouse(home).connect():
        pass
    return "warehouse.duckdb"


def _landing_area(home: Path) -> str:
    (home / "landing").mkdir()
    return "landing"


@pytest.mark.parametrize("populate", [_settings_file, _warehouse, _landing_area])
def test_ui_refuses_to_sample_into_a_home_that_is_not_empty_and_changes_nothing(
    home: Path, populate: object, capsys: pytest.CaptureFixture[str]
) -> None:
    """SPEC 10 (v4): `replay-assets ui` writes its sample only into an empty home; anything else
    is a usage error naming what is there, before anything in the home changes."""
    assert callable(populate)
    what = populate(home)
    before = tree(home)
    assert main(["ui", "--home", str(home), "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert "REPLAY_USAGE" in err and what in err and "--no-sample" in err
    assert tree(home) == before


def test_ui_without_the_sample_opens_a_populated_home_and_keeps_its_settings(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """SPEC 10 (v4): `--no-sample` only starts the UI, so it works on a populated home and leaves
    the operator's settings and data as they are."""
    _settings_file(home)
    _warehouse(home)
    settings_text = (home / "replay-assets.json").read_bytes()
    assert main(["ui", "--home", str(home), "--no-sample", "--dry-run"]) == 0
    assert "landing the sample scenario" not in capsys.readouterr().out
    assert (home / "replay-assets.json").read_bytes() == settings_text
    assert not (home / "landing").exists()


# --------------------------------------------------------------------------- in_progress.json


def _stale_note(home: Path, pid: int) -> None:
    """A note as an earlier release (or a killed writer whose pid was reused) leaves it."""
    note = {"use_case": "apply", "partition": D1, "run_id": "r", "since": NOW, "pid": pid}
    (home / in_progress.FILE).write_text(json.dumps(note))


def test_a_note_whose_owner_is_gone_is_dropped_though_its_pid_lives(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """SPEC 10 (v4): a note whose owner is gone is dropped. Its pid alone does not say so (pids
    are reused: here it is this very test's), and a later writer never writes it back."""
    p = Pipeline(settings_for(home, NOW))
    deliver(p, D1, "b1", [event(1, "o1")])
    _stale_note(home, os.getpid())
    assert main(["status", "--json", "--home", str(home)]) == 0
    assert json.loads(capsys.readouterr().out)["in_progress"] is None
    assert drive(p)[0] == f"apply {D1}: APPLIED"
    assert not (home / in_progress.FILE).exists()
    assert main(["status", "--home", str(home)]) == 0
    assert "in progress" not in capsys.readouterr().out


def test_an_enclosing_note_of_the_same_writer_comes_back_after_the_inner_one(home: Path) -> None:
    """A use case inside another (apply lands a late batch) notes itself, then the outer note is
    back; the owner's own notes are live, and none is left once the writer is done."""
    now = parse_instant(NOW, "now")
    with in_progress.doing(home, "apply", D2, "run-1", now):
        with in_progress.doing(home, "land", D1, "run-1", now):
            assert (in_progress.current(home) or {}).get("use_case") == "land"
        outer = in_progress.current(home) or {}
        assert (outer.get("use_case"), outer.get("partition"), outer.get("run_id")) == ("apply", D2, "run-1")
    assert not (home / in_progress.FILE).exists()


NOTE_VALUES = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=20)
)
NOTES = st.one_of(
    st.binary(max_size=200),
    st.dictionaries(
        st.sampled_from(["pid", "owner", "use_case", "partition", "since", "x"]), NOTE_VALUES
    ).map(lambda d: json.dumps(d).encode()),
    st.sampled_from([0, -1, 1, os.getpid(), 2**31, 2**70]).map(
        lambda pid: json.dumps({"use_case": "apply", "partition": D1, "since": NOW, "pid": pid}).encode()
    ),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(content=NOTES)
def test_whatever_a_note_holds_no_phantom_load_is_shown_or_kept(tmp_path: Path, content: bytes) -> None:
    """SPEC 10 (v4): the note is read as a bounded regular file and believed only when its owner
    lives; garbage, a pid of 0 or -1 (process groups), a live stranger's pid or an
    out-of-range one never show a load in progress, and the next writer leaves no note behind."""
    home = tmp_path / "note-home"
    home.mkdir(exist_ok=True)
    (home / in_progress.FILE).write_bytes(content)
    assert in_progress.current(home) is None
    with in_progress.doing(home, "apply", D1, None, parse_instant(NOW, "now")):
        assert (in_progress.current(home) or {}).get("partition") == D1
    assert not (home / in_progress.FILE).exists()


def test_an_oversized_note_is_not_read_whole(home: Path) -> None:
    """SPEC 10 (v4): the home's own files are bounded before they are buffered."""
    (home / in_progress.FILE).write_bytes(b'{"pid": ' + b" " * (8 << 20) + b"1}")
    assert in_progress.current(home) is None


def test_a_directory_in_place_of_the_note_is_refused_by_run_with_the_reason(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """SPEC 10 (v4): the home's own files are regular files only; `run` refuses anything else
    before it starts, naming the file and the rule, and readers still answer."""
    deliver(Pipeline(settings_for(home, NOW)), D1, "b1", [event(1, "o1")])
    (home / in_progress.FILE).mkdir()
    assert main(["run", "--home", str(home)]) == 1
    err = capsys.readouterr().err
    assert "REPLAY_HOME_FILE_REFUSED" in err and "in_progress.json is a directory" in err
    assert not (home / "warehouse.duckdb").exists()
    assert main(["status", "--json", "--home", str(home)]) == 0
    assert json.loads(capsys.readouterr().out)["in_progress"] is None


@pytest.mark.parametrize("name", ["warehouse.lock", "run.lock"])
@pytest.mark.parametrize("kind", ["directory", "symlink"])
def test_a_lock_file_that_is_no_regular_file_is_refused_and_nothing_is_made_outside(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, kind: str
) -> None:
    """SPEC 10 (v4): the home's own files are regular files only, also its lock files: a
    directory there is a reason (REPLAY_HOME_FILE_REFUSED), never a traceback, and a symlink is
    never followed to create a file outside the home."""
    deliver(Pipeline(settings_for(home, NOW)), D1, "b1", [event(1, "o1")])
    outside = tmp_path / "elsewhere" / "target.lock"
    outside.parent.mkdir()
    if kind == "directory":
        (home / name).mkdir()
    else:
        (home / name).symlink_to(outside)
    assert main(["run", "--home", str(home)]) == 1
    err = capsys.readouterr().err
    assert "REPLAY_HOME_FILE_REFUSED" in err and name in err and "Traceback" not in err
    assert not outside.exists() and not (home / "warehouse.duckdb").exists()


@pytest.mark.parametrize(
    ("name", "command", "code"),
    [
        ("in_progress.json", "status", 0),  # the note is a hint: the reader answers without it
        ("in_progress.json", "run", 1),
        ("clock.json", "status", 1),
        ("clock.json", "run", 1),
    ],
)
def test_a_fifo_among_the_home_files_never_hangs_a_command(
    home: Path, name: str, command: str, code: int
) -> None:
    """SPEC 10 (v4): the home's own files are opened non-blocking, so a FIFO nobody writes to
    neither hangs a reader nor a writer holding its locks; a writer refuses it with the reason
    before anything happens (the virtual clock is read by every command, so it refuses too)."""
    deliver(Pipeline(settings_for(home, NOW)), D1, "b1", [event(1, "o1")])  # work for `run` to do
    os.mkfifo(home / name)
    done = child(home, command)
    assert done.returncode == code, done.stderr[-2000:]
    if code:
        assert "REPLAY_HOME_FILE_REFUSED" in done.stderr and f"{name} is a FIFO" in done.stderr
        assert not (home / "warehouse.duckdb").exists()


# --------------------------------------------------------------------------- the CLI's own output


@pytest.mark.parametrize("argv", [["status"], ["status", "--json"], ["recovery", "inspect"]])
def test_a_closed_pipe_ends_a_command_quietly_as_a_shell_expects(home: Path, argv: list[str]) -> None:
    """`replay-assets status | head -2`: a reader that went away ends the command with the exit
    status of a process stopped by SIGPIPE (128 + 13), without a traceback."""
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before anything is written: every write fails
    env = {**os.environ, "REPLAY_ASSETS_NOW": NOW}
    try:
        done = subprocess.run(
            [*CLI, *argv, "--home", str(home)],
            env=env,
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            timeout=HANG_GUARD_SECONDS,
        )
    finally:
        os.close(write_end)
    assert done.returncode == 128 + signal.SIGPIPE
    assert done.stderr == ""


def test_the_refusal_of_an_as_of_read_behind_the_horizon_reads_correctly(
    pruned: Pipeline,  # noqa: F811 (the fixture imported above)
    capsys: pytest.CaptureFixture[str],
) -> None:
    """SPEC 10: an `export --as-of` reaching behind the horizon is refused with a clear reason."""
    home = pruned.settings.home
    out = str(home.parent / "out.csv")
    assert main(["export", "current_orders", "--as-of", D2, "--home", str(home), "--output", out]) == 2
    err = capsys.readouterr().err
    assert "as of of" not in err
    assert f"an as-of read of load date {D2} reaches behind the retention horizon" in err


def test_a_fifo_in_place_of_the_published_copys_record_never_hangs_run(home: Path) -> None:
    """SPEC 10 (v4): the published copy's refresh record (``published/exported.json``) is read
    like the home's other files: a FIFO there fails the refresh with the reason instead of
    hanging it while it holds the warehouse."""
    deliver(Pipeline(settings_for(home, NOW)), D1, "b1", [event(1, "o1")])
    (home / "published").mkdir()
    os.mkfifo(home / "published" / "exported.json")
    done = child(home, "run")
    assert done.returncode == 1, done.stderr[-2000:]
    assert "exported.json is a FIFO" in done.stdout + done.stderr
