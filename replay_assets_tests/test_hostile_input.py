"""Hostile input (SPEC 10), organised by rule. Each test feeds input a careless or malicious
source or user could give and asserts the exit code or status, the reason code, that nothing
outside the home changed, and that the warehouse still adds up afterwards (reconciliation and
re-verification find nothing wrong).

Most tests drive the command line in-process (``main``) on a temporary home; the FIFO test runs
``replay-assets run`` as a child process, since a hang is the defect it guards against.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from replay_assets.core import names, strict_json
from replay_assets.core.errors import RejectReason, ReplayError
from replay_assets.core.events import ValidationContext, parse_event
from replay_assets.core.status import DateStatus
from replay_assets.entrypoints.cli import main
from replay_assets.storage.home import files as safe_files
from replay_assets.storage.landing.deliveries import write_delivery
from replay_assets.usecases.context import Pipeline
from replay_assets.usecases.decide import decide
from replay_assets.usecases.land import land as land_date
from replay_assets.usecases.operations import Operations
from replay_assets_tests.helpers import drive, settings_for
from replay_assets_tests.storage.test_bad_input import event

NOW = "2026-01-10T12:00:00Z"
D1, D2 = "2026-01-01", "2026-01-02"
CASES = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


# --------------------------------------------------------------------------- helpers


@pytest.fixture
def sandbox(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder holding the home (``sandbox/home``) and a sibling a path escape would reach."""
    monkeypatch.setenv("REPLAY_ASSETS_NOW", NOW)
    for name in ("REPLAY_ASSETS_HOME", "DAGSTER_HOME", "REPLAY_ASSETS_FAIL_POINT", "REPLAY_ASSETS_FAIL_ONCE"):
        monkeypatch.delenv(name, raising=False)
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "keep.txt").write_text("evidence")
    (tmp_path / "home").mkdir()
    events_file(tmp_path, [event(1)])  # what `land` reads by default
    return tmp_path


def tree(root: Path, skip: Path | None = None) -> dict[str, bytes]:
    """Every file under ``root`` (not under ``skip``) with its content: what a test compares."""
    found = {}
    for path in sorted(root.rglob("*")):
        if skip is not None and (path == skip or skip in path.parents):
            continue
        if path.is_symlink() or path.is_file():
            found[str(path.relative_to(root))] = path.read_bytes() if path.is_file() else b"<link>"
    return found


def outside(sandbox: Path) -> dict[str, bytes]:
    return tree(sandbox, skip=sandbox / "home")


def events_file(folder: Path, lines: list[str], name: str = "events.jsonl") -> Path:
    path = folder / name
    path.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    return path


def land(sandbox: Path, *extra: str, lines: list[str] | None = None) -> int:
    data = events_file(sandbox, lines if lines is not None else [event(1)])
    return main(["land", str(data), "--home", str(sandbox / "home"), *extra])


def pipeline(sandbox: Path) -> Pipeline:
    return Pipeline(settings_for(sandbox / "home", NOW))


def assert_consistent(p: Pipeline) -> None:
    """Reconciliation adds up per batch and every publication recomputes equal to its record."""
    ops = Operations(p)
    assert all(row["adds_up"] for row in ops.reconcile())
    for asset in ("current_orders", "daily_aggregates"):
        assert not ops.reverify(asset).mismatched


def deliver(p: Pipeline, source: str, day: str, batch_id: str, lines: list[str]) -> Path:
    return write_delivery(p.settings.landing, source, day, batch_id, lines, f"{day}T06:00:00Z")


def plans(p: Pipeline) -> dict[str, tuple[DateStatus, str]]:
    return {plan.load_date: (plan.status, plan.reason) for plan in decide(p).plans}


def rows(p: Pipeline, sql: str) -> list[tuple[Any, ...]]:
    with p.warehouse.connect() as con:
        return con.execute(sql).fetchall()


# --------------------------------------------------------------------------- names become paths


NAME_TEXT = st.one_of(
    st.sampled_from(
        ["../../x", "/abs/path", "a/b", "..", ".", "", "a b", "-x", ".hidden", "x" * 81, "a\x00b"]
    ),
    st.text(max_size=12),
    st.from_regex(names.PATH_NAME, fullmatch=True),
)
DAY_TEXT = st.one_of(
    st.sampled_from(["2026-13-45", "2026-1-1", "garbage", "", "/abs/path", "../2026-01-01", "2026-02-30"]),
    st.text(max_size=12),
    st.dates(dt.date(2020, 1, 1), dt.date(2026, 1, 9)).map(dt.date.isoformat),
)


@CASES
@given(source=NAME_TEXT, day=DAY_TEXT, batch=NAME_TEXT)
def test_land_writes_only_valid_names_inside_the_landing_area(
    sandbox: Path, source: str, day: str, batch: str
) -> None:
    assume("\x00" not in source + day + batch)  # argv cannot carry NUL
    flags = [f"--source={source}", f"--load-date={day}", f"--batch-id={batch}"]
    before = outside(sandbox)
    landing = sandbox / "home" / "landing"
    already = tree(landing) if landing.exists() else {}
    valid = (
        names.is_name(names.NameKind.SOURCE, source)
        and names.is_name(names.NameKind.LOAD_DATE, day)
        and names.is_name(names.NameKind.BATCH_ID, batch)
    )
    code = land(sandbox, *flags)
    assert outside(sandbox) == before
    after = tree(landing) if landing.exists() else {}
    if not valid:
        assert code == 2 and after == already
        return
    assert code in (0, 1)  # 1: the batch id is already used by another example's delivery
    for path in set(after) - set(already):
        assert Path(path).parts[:2] == (source, day)
        assert Path(path).name in (f"{batch}.jsonl", f"{batch}.manifest.json")


@pytest.mark.parametrize(
    "flag, value",
    [("--ready-at", "garbage"), ("--ready-at", "2026-01-01T08:00:00"), ("--load-date", "2026-13-45")],
)
def test_land_refuses_values_run_could_not_read(sandbox: Path, flag: str, value: str) -> None:
    args = {"--source": "erp", "--load-date": D1, "--ready-at": f"{D1}T06:00:00Z", flag: value}
    assert land(sandbox, *[x for pair in args.items() for x in pair]) == 2
    assert not (sandbox / "home" / "landing").exists()


def test_land_of_a_missing_or_non_utf8_file_is_a_usage_error(sandbox: Path) -> None:
    home = str(sandbox / "home")
    common = ["--source", "erp", "--load-date", D1, "--home", home]
    assert main(["land", str(sandbox / "absent.jsonl"), *common]) == 2
    (sandbox / "latin1.jsonl").write_bytes(b'{"name": "caf\xe9"}\n')
    assert main(["land", str(sandbox / "latin1.jsonl"), *common]) == 2
    assert main(["land", str(sandbox / "outside"), *common]) == 2  # a folder
    assert not (sandbox / "home" / "landing").exists()


# --------------------------------------------------------------------------- a batch id is unique


def test_land_never_replaces_a_delivery_and_an_identical_one_is_a_no_op(sandbox: Path) -> None:
    common = ["--load-date", D1, "--batch-id", "B1", "--ready-at", f"{D1}T06:00:00Z"]
    assert land(sandbox, "--source", "erp", *common) == 0
    landed = tree(sandbox / "home" / "landing")
    assert land(sandbox, "--source", "erp", *common) == 0  # the identical delivery again
    assert land(sandbox, "--source", "erp", *common, lines=[event(1), event(2)]) == 1
    assert land(sandbox, "--source", "crm", *common) == 1  # another source
    assert land(sandbox, "--source", "erp", *common[2:], "--load-date", D2) == 1  # another date
    assert tree(sandbox / "home" / "landing") == landed


def test_default_batch_ids_differ_by_source_and_load_date(sandbox: Path) -> None:
    for source, day in (("erp", D1), ("crm", D1), ("erp", D2)):
        assert land(sandbox, "--source", source, "--load-date", day) == 0
    manifests = list((sandbox / "home" / "landing").glob("*/*/*.manifest.json"))
    assert len({m.name for m in manifests}) == 3


def test_a_batch_id_used_by_two_sources_hides_neither(sandbox: Path) -> None:
    p = pipeline(sandbox)
    deliver(p, "erp", D1, "B1", [event(1, "o1")])
    deliver(p, "crm", D1, "B1", [event(2, "o2")])
    status, reason = plans(p)[D1]
    assert status is DateStatus.BLOCKED
    assert "REPLAY_BATCH_ID_REUSED: batch B1 of source erp" in reason
    assert "held by source crm for load date 2026-01-01" in reason
    assert main(["run", "--home", str(sandbox / "home")]) == 1
    assert rows(p, "SELECT count(*) FROM current_orders") == [(0,)]
    # the source re-delivers under a new batch id: both deliveries apply
    (p.settings.landing / "crm" / D1 / "B1.manifest.json").unlink()
    deliver(p, "crm", D1, "B1-CRM", [event(2, "o2")])
    drive(p)
    assert rows(p, "SELECT order_id FROM current_orders ORDER BY 1") == [("o1",), ("o2",)]
    assert_consistent(p)


def test_a_batch_id_reused_on_a_later_load_date_is_reported_not_missing(sandbox: Path) -> None:
    p = pipeline(sandbox)
    deliver(p, "erp", D1, "B1", [event(1, "o1")])
    deliver(p, "erp", D2, "B1", [event(2, "o2")])
    got = plans(p)
    assert got[D1][0] is not DateStatus.MISSING and got[D2][0] is DateStatus.BLOCKED
    assert "REPLAY_BATCH_ID_REUSED" in got[D2][1]
    drive(p)
    assert rows(p, "SELECT order_id FROM current_orders") == [("o1",)]
    assert_consistent(p)


def test_a_reused_batch_id_is_named_by_status(sandbox: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = pipeline(sandbox)
    deliver(p, "erp", D1, "B1", [event(1, "o1")])
    drive(p)
    deliver(p, "crm", D1, "B1", [event(2, "o2")])
    assert main(["status", "--home", str(sandbox / "home")]) == 1
    out = capsys.readouterr().out
    assert "REPLAY_BATCH_ID_REUSED: batch B1 of source crm" in out and "landed before" in out


# --------------------------------------------------------------------------- duplicated JSON keys


def test_a_manifest_with_a_duplicated_key_is_unreadable_and_reported(
    sandbox: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    p = pipeline(sandbox)
    deliver(p, "crm", D1, "C1", [event(2, "o2")])
    path = deliver(p, "erp", D1, "B1", [event(1, "o1")])
    manifest = path.read_text()
    path.write_text(manifest[:-1] + ',"files":[]}')  # the real list, then an empty one
    assert main(["run", "--home", str(sandbox / "home")]) == 1
    out = capsys.readouterr().out
    assert "unreadable manifest erp/2026-01-01/B1.manifest.json" in out and "'files' twice" in out
    # the load date waits for the delivery it cannot read: never applied without it, nor as empty
    assert plans(p)[D1][0] is DateStatus.BLOCKED_UPSTREAM and "B1.manifest.json" in plans(p)[D1][1]
    assert rows(p, "SELECT count(*) FROM reconciliation") == [(0,)]
    assert main(["status", "--home", str(sandbox / "home")]) == 1
    assert "'files' twice" in capsys.readouterr().out
    path.write_text(manifest)  # the source repairs its manifest: both deliveries apply
    drive(p)
    assert rows(p, "SELECT order_id FROM current_orders ORDER BY 1") == [("o1",), ("o2",)]
    assert_consistent(p)


JSON_VALUE = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=8,
)


@settings(max_examples=200, deadline=None)
@given(obj=st.dictionaries(st.text(max_size=4), JSON_VALUE, min_size=1, max_size=4), data=st.data())
def test_a_duplicated_key_at_any_depth_is_rejected_never_last_wins(obj: dict[str, Any], data: Any) -> None:
    key = data.draw(st.sampled_from(sorted(obj)))
    text = json.dumps(obj)
    doubled = text[:-1] + ", " + json.dumps(key) + ": " + json.dumps(obj[key]) + "}"
    nested = json.dumps({"after": obj})[:-1][:-1] + ", " + json.dumps(key) + ": 1}}"
    for line in (doubled, nested):
        with pytest.raises(strict_json.DuplicateKey):
            strict_json.loads(line)
    assert strict_json.loads(text) == obj
    ctx = ValidationContext(dt.date(2020, 1, 1), dt.date(2030, 1, 1))
    outcome = parse_event(doubled, ctx)
    assert getattr(outcome, "reason", None) is RejectReason.DUPLICATE_KEY


def test_an_event_with_a_duplicated_key_is_rejected_and_the_rest_applies(sandbox: Path) -> None:
    p = pipeline(sandbox)
    doubled = event(2, "o2")[:-1] + ', "op": "delete"}'
    deliver(p, "erp", D1, "B1", [event(1, "o1"), doubled, event(3, "o3")])
    drive(p)
    assert rows(p, "SELECT order_id FROM current_orders ORDER BY 1") == [("o1",), ("o3",)]
    assert rows(p, "SELECT line_number, reason_code FROM rejected_events") == [(2, "DUPLICATE_KEY")]
    assert_consistent(p)


@pytest.mark.parametrize(
    "text",
    ['{"slo": {}, "slo": {}}', "{not json", "[]", '{"sorces": {}}', '{"load_date_start": "2026-1-1"}'],
)
def test_a_malformed_settings_file_is_a_usage_error(sandbox: Path, text: str) -> None:
    (sandbox / "home" / "replay-assets.json").write_text(text)
    assert main(["run", "--home", str(sandbox / "home")]) == 2
    assert main(["status", "--home", str(sandbox / "home")]) == 2
    assert not (sandbox / "home" / "warehouse.duckdb").exists()


def test_a_garbage_clock_is_a_usage_error(sandbox: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REPLAY_ASSETS_NOW", "garbage")
    assert main(["run", "--home", str(sandbox / "home")]) == 2
    assert not (sandbox / "home" / "warehouse.duckdb").exists()


# --------------------------------------------------------------------------- the filesystem


def _symlink_out(folder: Path, name: str, target: Path) -> None:
    (folder / name).unlink()
    os.symlink(target, folder / name)


def test_a_data_file_symlinked_out_of_its_folder_is_blocked_upstream(sandbox: Path) -> None:
    p = pipeline(sandbox)
    folder = deliver(p, "erp", D1, "B1", [event(1)]).parent
    secret = sandbox / "outside" / "B1.jsonl"
    secret.write_bytes((folder / "B1.jsonl").read_bytes())  # same hash: only the link is wrong
    _symlink_out(folder, "B1.jsonl", secret)
    status, reason = plans(p)[D1]
    assert status is DateStatus.BLOCKED_UPSTREAM
    assert "B1.jsonl is not a regular file" in reason and "symlink" in reason
    assert drive(p) == []
    assert rows(p, "SELECT count(*) FROM raw_receipts") == [(0,)]


@pytest.mark.parametrize("swap", ["symlink", "FIFO"])
def test_a_file_swapped_after_the_sensor_looked_is_refused_at_landing(sandbox: Path, swap: str) -> None:
    p = pipeline(sandbox)
    folder = deliver(p, "erp", D1, "B1", [event(1)]).parent
    assert decide(p).next is not None  # the cheap look saw a regular file
    secret = sandbox / "outside" / "B1.jsonl"
    secret.write_bytes((folder / "B1.jsonl").read_bytes())
    if swap == "symlink":
        _symlink_out(folder, "B1.jsonl", secret)
    else:  # nobody writes to it: a blocking open in the landing step would wait forever
        (folder / "B1.jsonl").unlink()
        os.mkfifo(folder / "B1.jsonl")
    with pytest.raises(ReplayError, match=swap):
        land_date(p, D1)
    assert rows(p, "SELECT count(*) FROM raw_receipts") == [(0,)]
    status, reason = plans(p)[D1]
    assert status is DateStatus.BLOCKED_UPSTREAM and "B1.jsonl" in reason


@pytest.mark.parametrize(
    "kind", ["self-loop symlink", "directory", "symlinked folder", "symlinked source", "symlinked manifest"]
)
def test_odd_entries_are_reported_and_other_sources_still_apply(
    sandbox: Path, kind: str, capsys: pytest.CaptureFixture[str]
) -> None:
    p = pipeline(sandbox)
    deliver(p, "crm", D1, "C1", [event(1, "o1")])
    folder = deliver(p, "erp", D1, "B1", [event(2, "o2")]).parent
    if kind == "self-loop symlink":
        (folder / "B1.jsonl").unlink()
        os.symlink("B1.jsonl", folder / "B1.jsonl")
    elif kind == "directory":
        (folder / "B1.jsonl").unlink()
        (folder / "B1.jsonl").mkdir()
    elif kind == "symlinked folder":
        (sandbox / "outside" / D2).mkdir()
        os.symlink(sandbox / "outside" / D2, folder.parent / D2)
    elif kind == "symlinked source":
        os.symlink(sandbox / "outside", folder.parent.parent / "pos")
    else:
        copy = sandbox / "outside" / "B1.manifest.json"
        copy.write_bytes((folder / "B1.manifest.json").read_bytes())
        _symlink_out(folder, "B1.manifest.json", copy)
    home = str(sandbox / "home")
    assert main(["status", "--home", home]) == 1
    out = capsys.readouterr().out
    if kind == "symlinked manifest":
        assert "unreadable manifest erp/2026-01-01/B1.manifest.json: B1.manifest.json is a symlink" in out
        assert drive(p) == []  # erp's delivery for D1 is not there until it is a regular file
    elif kind.startswith("symlinked"):
        where = "erp/2026-01-02" if kind == "symlinked folder" else "pos"
        assert f"unreadable manifest {where}: a symlinked folder in the landing area" in out
        drive(p)
        assert rows(p, "SELECT order_id FROM current_orders ORDER BY 1") == [("o1",), ("o2",)]
    else:
        assert "BLOCKED_UPSTREAM" in out and "B1.jsonl is not a regular file" in out
        assert drive(p) == []
    assert_consistent(p)


def test_a_fifo_in_place_of_the_data_file_never_hangs_run(sandbox: Path) -> None:
    p = pipeline(sandbox)
    path = deliver(p, "erp", D1, "B1", [event(1)])
    manifest = json.loads(path.read_text())
    del manifest["files"][0]["bytes"]  # optional: without it only the landing step reads the file
    path.write_text(json.dumps(manifest))
    (path.parent / "B1.jsonl").unlink()
    os.mkfifo(path.parent / "B1.jsonl")
    home = sandbox / "home"
    env = {**os.environ, "REPLAY_ASSETS_NOW": NOW, "DAGSTER_HOME": str(home / "dagster")}
    done = subprocess.run(
        [sys.executable, "-m", "replay_assets.entrypoints.cli", "run", "--home", str(home)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,  # a guard against the defect (a hang), not a timing assertion
    )
    assert done.returncode == 1, done.stderr
    assert "BLOCKED_UPSTREAM" in done.stdout and "B1.jsonl is not a regular file" in done.stdout
    assert "FIFO" in done.stdout


def test_opening_a_fifo_directly_never_blocks(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe")  # nobody writes: a blocking open would wait forever
    with pytest.raises(safe_files.NotRegularFile, match="FIFO"):
        safe_files.open_regular(tmp_path, "pipe")


# --------------------------------------------------------------------------- lines: bounded, UTF-8


def test_an_over_long_line_is_rejected_while_read_and_kept_as_a_prefix(sandbox: Path) -> None:
    p = pipeline(sandbox)
    limit = p.settings.limits.line_bytes
    huge = '{"event_id": "' + "x" * (3 * limit) + '"}'
    deliver(p, "erp", D1, "B1", [event(1, "o1"), huge, event(3, "o3")])
    drive(p)
    assert rows(p, "SELECT order_id FROM current_orders ORDER BY 1") == [("o1",), ("o3",)]
    [(reason, detail)] = rows(p, "SELECT reason_code, detail FROM rejected_events")
    assert reason == "LINE_TOO_LONG" and f"exceeds {limit} bytes" in detail
    [(payload, digest)] = rows(p, "SELECT payload, payload_sha256 FROM raw_receipts WHERE line_number = 2")
    assert len(payload) == safe_files.EVIDENCE_BYTES and huge.startswith(payload)
    assert digest == hashlib.sha256(huge.encode()).hexdigest()  # the whole line's identity
    assert_consistent(p)


def test_reading_an_over_long_line_buffers_at_most_a_block(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The line is never held whole: memory stays near one read block whatever its length."""
    import tracemalloc

    monkeypatch.setattr(safe_files, "BLOCK_BYTES", 64 << 10)
    (tmp_path / "f.jsonl").write_bytes(b"y" * (32 << 20) + b"\n{}\n")
    tracemalloc.start()
    with safe_files.open_regular(tmp_path, "f.jsonl") as fh:
        blocks = list(safe_files.text_lines(fh, hashlib.sha256(), 1 << 20))
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    lines = [line for lines, _ in blocks for line in lines]
    assert lines[1] == "{}" and blocks[0][1][0].reason is RejectReason.LINE_TOO_LONG
    assert peak < 4 << 20  # the line is 32 MiB


def test_invalid_utf8_is_rejected_never_replaced(sandbox: Path) -> None:
    p = pipeline(sandbox)
    folder = deliver(p, "erp", D1, "B1", [event(1, "o1"), event(2, "o2")]).parent
    data = (folder / "B1.jsonl").read_bytes()
    bad_line = event(3, "o3", store_id="sXX").encode().replace(b'"sXX"', b'"s\xff"')
    data += bad_line + b"\n"
    write_raw(folder, "B1", data, events=3)
    drive(p)
    assert rows(p, "SELECT order_id FROM current_orders ORDER BY 1") == [("o1",), ("o2",)]
    assert rows(p, "SELECT line_number, reason_code FROM rejected_events") == [(3, "INVALID_UTF8")]
    [(payload, digest)] = rows(p, "SELECT payload, payload_sha256 FROM raw_receipts WHERE line_number = 3")
    assert "\\xff" in payload and digest == hashlib.sha256(data.split(b"\n")[2]).hexdigest()
    assert_consistent(p)


def write_raw(folder: Path, batch: str, data: bytes, events: int) -> None:
    """Rewrite a delivery's data file with raw bytes and its manifest to match."""
    (folder / f"{batch}.jsonl").write_bytes(data)
    manifest = json.loads((folder / f"{batch}.manifest.json").read_text())
    manifest["files"] = [
        {
            "path": f"{batch}.jsonl",
            "sha256": hashlib.sha256(data).hexdigest(),
            "events": events,
            "bytes": len(data),
        }
    ]
    (folder / f"{batch}.manifest.json").write_text(json.dumps(manifest))


# --------------------------------------------------------------------------- usage errors exit 2


@pytest.fixture
def applied(sandbox: Path) -> Iterator[Pipeline]:
    p = pipeline(sandbox)
    deliver(p, "erp", D1, "B1", [event(1, "o1")])
    deliver(p, "erp", D2, "B2", [event(2, "o2")])
    drive(p)
    yield p


@CASES
@given(as_of=st.one_of(DAY_TEXT, st.sampled_from(["2026-1-1", "garbage", "2026-13-45", ""])))
def test_export_as_of_takes_only_calendar_dates(
    applied: Pipeline, sandbox: Path, as_of: str, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    code = main(["export", "current_orders", "--as-of", as_of, "--home", str(sandbox / "home")])
    out = capsys.readouterr().out
    if names.is_name(names.NameKind.LOAD_DATE, as_of):
        assert code == 0
        assert ("o2" in out) == (as_of >= D2) and ("o1" in out) == (as_of >= D1)
    else:
        assert code == 2 and out == ""


def test_export_never_writes_into_the_home(applied: Pipeline, sandbox: Path) -> None:
    home = sandbox / "home"
    before = tree(home, skip=home / "dagster")
    for output in (home / "warehouse.duckdb", home / "published.duckdb", home / "x.csv", home):
        assert main(["export", "current_orders", "--output", str(output), "--home", str(home)]) == 2
    assert (
        main(["export", "current_orders", "--output", str(sandbox / "no" / "x.csv"), "--home", str(home)])
        == 2
    )
    assert tree(home, skip=home / "dagster") == before
    assert_consistent(applied)


@pytest.mark.parametrize("home", ["home", "locked-home"])  # "lock" in a path is not a lock
def test_a_damaged_warehouse_is_named_not_busy(
    sandbox: Path, home: str, capsys: pytest.CaptureFixture[str]
) -> None:
    (sandbox / home).mkdir(exist_ok=True)
    (sandbox / home / "warehouse.duckdb").write_bytes(b"not a database" * 100)
    assert main(["export", "current_orders", "--home", str(sandbox / home)]) == 1
    assert "REPLAY_WAREHOUSE_UNREADABLE" in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv",
    [
        ["backfill", "--asset", "current_orders", "--from", "garbage", "--to", D2, "--note", "n"],
        ["backfill", "--asset", "current_orders", "--from", D2, "--to", D1, "--note", "n"],
        ["status", "--update", "garbage"],
        ["export", "current_orders", "--as-of", "2026-02-30"],
        ["resolve", "--batch-id", "../x", "--action", "skip", "--note", "n"],
    ],
)
def test_usage_errors_exit_2_before_anything_happens(sandbox: Path, argv: list[str]) -> None:
    home = sandbox / "home"
    assert main([*argv, "--home", str(home)]) == 2
    assert tree(home) == {}


def test_status_update_of_an_unknown_partition_exits_1(applied: Pipeline, sandbox: Path) -> None:
    assert main(["status", "--update", "2025-01-01", "--home", str(sandbox / "home")]) == 1
    assert main(["status", "--update", D1, "--home", str(sandbox / "home")]) == 0


def test_resolve_refuses_to_skip_a_batch_that_blocks_nothing(sandbox: Path) -> None:
    p = pipeline(sandbox)
    deliver(p, "erp", D1, "B1", [event(1, "o1")])
    home = str(sandbox / "home")
    assert main(["resolve", "--batch-id", "B1", "--action", "skip", "--note", "n", "--home", home]) == 2
    assert rows(p, "SELECT count(*) FROM batch_resolutions") == [(0,)]
    drive(p)
    assert rows(p, "SELECT order_id FROM current_orders") == [("o1",)]  # its events applied
    assert_consistent(p)


def test_a_valid_settings_file_sets_limits_and_the_lock_timeout(sandbox: Path) -> None:
    from replay_assets.core.config import settings_from

    text = '{"limits": {"line_bytes": 4096}, "lock_timeout_seconds": 5, "sources": {"erp": "2026-01-01"}}'
    got = settings_from({}, str(sandbox / "home"), text)
    assert got.limits.line_bytes == 4096 and got.lock_timeout_seconds == 5.0
    assert got.sources == {"erp": D1}


def test_a_delivery_dated_outside_the_load_date_window_is_named_by_status(
    sandbox: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    p = pipeline(sandbox)
    deliver(p, "erp", D1, "B1", [event(1, "o1")])
    deliver(p, "erp", "2027-06-01", "B-FUTURE", [event(2, "o2")])
    drive(p)
    assert main(["status", "--home", str(sandbox / "home")]) == 1
    out = capsys.readouterr().out
    assert "2027-06-01 OUT_OF_RANGE: load date of batch B-FUTURE outside" in out
    assert rows(p, "SELECT order_id FROM current_orders") == [("o1",)]


def test_a_warehouse_held_by_another_process_is_busy_not_damaged(
    applied: Pipeline, sandbox: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A process outside our lock (a consumer's DuckDB shell, say) holding the file read-write."""
    path = sandbox / "home" / "warehouse.duckdb"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            f"import duckdb, sys\ncon = duckdb.connect({str(path)!r})\n"
            "print('held', flush=True)\nsys.stdin.read()",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        # what only the warehouse holds is busy, not damaged; consumer tables come from the copy
        assert main(["export", "raw_receipts", "--home", str(sandbox / "home")]) == 1
        assert "REPLAY_WAREHOUSE_BUSY" in capsys.readouterr().err
        assert main(["export", "current_orders", "--home", str(sandbox / "home")]) == 0
    finally:
        holder.communicate("", timeout=60)
    assert main(["export", "current_orders", "--home", str(sandbox / "home")]) == 0
