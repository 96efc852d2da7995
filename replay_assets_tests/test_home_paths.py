"""The home's own path (SPEC 10 "Hostile input", v4): "any character a file system allows,
including ``*?[]{}\\'"`` and unicode, works, and a path never reaches a glob, a SQL text or a URL
unescaped (two homes side by side never see each other's rows)".

The commands run in-process (``main``) on homes under a temporary folder; each test asserts exit
codes, which rows each home answers with, and that nothing is created beside the homes. DuckDB
2.0.1 cannot open a database under a path holding a backslash or a ``?``: such a home is refused
as a usage error before anything is written (``core/config.py``).
"""

from __future__ import annotations

import csv
import io
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import dagster as dg
import duckdb
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from replay_assets.core.config import settings_from
from replay_assets.entrypoints.cli import main
from replay_assets.entrypoints.runner import instance_for
from replay_assets.storage.home import paths
from replay_assets.usecases.context import Pipeline
from replay_assets_tests.helpers import drive, settings_for
from replay_assets_tests.storage.test_bad_input import event

NOW = "2026-01-10T12:00:00Z"
D1 = "2026-01-01"
# printable text a file name may hold (no ``/``, no NUL); backslash and ``?`` are refused homes
NAME_CHARS = st.characters(
    codec="utf-8", categories=("L", "N", "P", "S", "Zs"), exclude_characters="/\\?\x00"
)
NAME_PART = st.text(NAME_CHARS, max_size=6)
# a second home's name that DuckDB's glob would match the first home's name with
GLOB_MATCHES = ("[A]", "*", "[!B]", "[[]A[]]", "{A,B}", "'A'", '"A"')


@pytest.fixture
def sandbox(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("REPLAY_ASSETS_NOW", NOW)
    for name in ("REPLAY_ASSETS_HOME", "DAGSTER_HOME", "REPLAY_ASSETS_DELTA_ROOT", "REPLAY_ASSETS_WAREHOUSE"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path


def land(folder: Path, home: Path, order_id: str) -> None:
    data = folder / f"{order_id}.jsonl"
    data.write_text(event(1, order_id) + "\n", encoding="utf-8")
    assert main(["land", str(data), "--source", "erp", "--load-date", D1, "--home", str(home)]) == 0


def run_command(home: Path) -> None:
    assert main(["run", "--home", str(home)]) == 0


def run_storage(home: Path) -> None:
    """What ``run`` does without Dagster (``helpers.drive``): the same landing, apply and publish."""
    assert drive(Pipeline(settings_for(home, NOW)))


def assert_own_rows(
    folder: Path, names: dict[str, str], run: Callable[[Path], None], capsys: pytest.CaptureFixture[str]
) -> None:
    """Land and run each home (``name`` -> its one order), then ask every reader of each home."""
    homes = {folder / name: order_id for name, order_id in names.items()}
    for home, order_id in homes.items():
        land(folder, home, order_id)
        run(home)
    for home, order_id in homes.items():
        assert exported(home, capsys) == {order_id}
        assert published(home) == {order_id}
        assert exported_while_held(home, capsys) == {order_id}
    expected = {*names, *(f"{order_id}.jsonl" for order_id in names.values())}
    assert {p.name for p in folder.iterdir()} == expected  # nothing beside the homes


def exported(home: Path, capsys: pytest.CaptureFixture[str]) -> set[str]:
    capsys.readouterr()
    assert main(["export", "current_orders", "--home", str(home)]) == 0
    return {row["order_id"] for row in csv.DictReader(io.StringIO(capsys.readouterr().out))}


def published(home: Path) -> set[str]:
    """What a consumer's plain DuckDB session on the home's published.duckdb answers."""
    con = duckdb.connect(str(home / "published.duckdb"), read_only=True)
    try:
        return {str(r[0]) for r in con.execute("SELECT order_id FROM current_orders").fetchall()}
    finally:
        con.close()


def exported_while_held(home: Path, capsys: pytest.CaptureFixture[str]) -> set[str]:
    """``export`` while another process holds the warehouse (as a run does): it answers from
    the published copy."""
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(home / "warehouse.duckdb")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        return exported(home, capsys)
    finally:
        holder.communicate("")


HOLD = "import duckdb, sys\ncon = duckdb.connect(sys.argv[1])\nprint('held', flush=True)\nsys.stdin.read()"


def test_run_in_homes_named_like_globs_serves_each_its_own_rows(
    sandbox: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """SPEC 10: two homes side by side never see each other's rows: ``gAh``, ``g[A]h`` (a
    pattern matching ``gAh``) and ``g*h`` (matching both), each landed and run by the command
    line, then read by ``export`` (also while the warehouse is held, from the published copy)
    and through its ``published.duckdb``."""
    names = {"gAh": "order-plain", "g[A]h": "order-bracket", "g*h": "order-star"}
    assert_own_rows(sandbox, names, run_command, capsys)


@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(prefix=NAME_PART, suffix=NAME_PART, match=st.sampled_from(GLOB_MATCHES))
def test_two_homes_side_by_side_each_see_only_their_own_rows(
    sandbox: Path, capsys: pytest.CaptureFixture[str], prefix: str, suffix: str, match: str
) -> None:
    """SPEC 10: "any character a file system allows, including ``*?[]{}\\'"`` and unicode,
    works": two homes whose names hold any of them, one a glob pattern that matches the other's
    name, never see each other's rows (applied and published without Dagster; the command's
    own run is the test above)."""
    names = {f" {prefix}A{suffix}": "order-plain", f" {prefix}{match}{suffix}": "order-glob"}
    assert_own_rows(Path(tempfile.mkdtemp(dir=sandbox)), names, run_storage, capsys)


@pytest.mark.parametrize("name", ["g?h", "g\\h", "?", "a\\?b"])
def test_a_home_duckdb_cannot_address_is_refused_before_anything_is_written(
    sandbox: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    """SPEC 10: a path never reaches a file name or a URL unescaped; DuckDB reads a backslash in
    a database path as a separator and a ``?`` as a URL query, so such a home is a usage error
    (exit 2) naming the home and the rule, and nothing is created anywhere."""
    data = sandbox / "events.jsonl"
    data.write_text(event(1) + "\n", encoding="utf-8")
    before = sorted(p.name for p in sandbox.iterdir())
    home = str(sandbox / name)
    for argv in (
        ["land", str(data), "--source", "erp", "--load-date", D1],
        ["run"],
        ["status"],
        ["export", "current_orders"],
    ):
        capsys.readouterr()
        assert main([*argv, "--home", home]) == 2
        err = capsys.readouterr().err
        assert "REPLAY_USAGE" in err and repr(home) in err
    assert sorted(p.name for p in sandbox.iterdir()) == before


def test_the_instance_keeps_its_sqlite_files_in_a_folder_with_url_characters(sandbox: Path) -> None:
    """SPEC 10: a path never reaches a URL unescaped: the instance's SQLite databases (runs,
    schedules, event log) are created inside its folder whatever ``?#%`` it holds."""
    folder = sandbox / "inst?x=1#y%20z"
    instance = instance_for(folder)
    try:

        @dg.asset
        def probe() -> int:
            return 1

        assert dg.materialize([probe], instance=instance).success
        assert len(instance.get_runs()) == 1
    finally:
        instance.dispose()
    assert [p.name for p in sandbox.iterdir()] == [folder.name]
    assert (folder / "history" / "runs.db").is_file() and (folder / "schedules" / "schedules.db").is_file()


def test_backfill_runs_with_the_default_relative_home(
    sandbox: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """SPEC 10 (late delivery) with SPEC 9's default home ``data/``: the backfill's Dagster
    command runs in the instance folder and still finds the home and its workspace."""
    monkeypatch.chdir(sandbox)
    data = sandbox / "events.jsonl"
    data.write_text(event(1) + "\n", encoding="utf-8")
    assert main(["land", str(data), "--source", "erp", "--load-date", D1]) == 0
    assert main(["run"]) == 0
    capsys.readouterr()
    code = main(["backfill", "--asset", "current_orders", "--from", D1, "--to", D1, "--note", "relative"])
    assert code == 0, capsys.readouterr().err
    instance = instance_for(sandbox / "data" / "dagster")
    try:
        assert len(instance.get_backfills()) == 1
    finally:
        instance.dispose()
    assert sorted(p.name for p in sandbox.iterdir()) == ["data", "events.jsonl"]


def test_a_relative_delta_root_resolves_against_the_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SPEC 10 (scale-out): every process of a home finds one Delta warehouse: a relative
    ``REPLAY_ASSETS_DELTA_ROOT`` is under the home, never under the working directory."""
    home = tmp_path / "home"
    env = {"REPLAY_ASSETS_DELTA_ROOT": "tables/delta"}
    found = set()
    for cwd in (tmp_path, home):
        cwd.mkdir(exist_ok=True)
        monkeypatch.chdir(cwd)
        found.add(settings_from(env, str(home), None).delta_uri)
    assert found == {str((home / "tables" / "delta").resolve())}
    assert settings_from({"REPLAY_ASSETS_DELTA_ROOT": "s3://bucket/x"}, str(home), None).delta_uri == (
        "s3://bucket/x"
    )
    assert settings_from({}, str(home), None).delta_uri == str((home / "delta").resolve())
    assert os.path.isabs(settings_from({"REPLAY_ASSETS_DELTA_ROOT": str(tmp_path)}, "h", None).delta_uri)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(prefix=NAME_PART, suffix=NAME_PART, match=st.sampled_from(GLOB_MATCHES))
def test_an_escaped_path_reads_that_file_and_no_other(
    tmp_path: Path, prefix: str, suffix: str, match: str
) -> None:
    """SPEC 10: a path never reaches a glob unescaped: DuckDB (a path from Python, or the folder
    a view computes in SQL) and polars read the file named, never a sibling the name matches."""
    folder = Path(tempfile.mkdtemp(dir=tmp_path))
    files = {}
    for name in (f"{prefix}A{suffix}", f"{prefix}{match}{suffix}", f"{prefix}B{suffix}"):
        (folder / name).mkdir()
        files[name] = str(folder / name / "x.parquet")
        pl.DataFrame({"home": [name]}).write_parquet(files[name])
    con = duckdb.connect()
    try:
        in_sql = f"SELECT home FROM read_parquet({paths.glob_literal_sql('$folder')} || '/*.parquet')"
        for name, path in files.items():
            assert con.execute(in_sql, {"folder": str(folder / name)}).fetchall() == [(name,)]
            literal = [paths.glob_literal(path)]
            assert con.execute("SELECT home FROM read_parquet(?)", literal).fetchall() == [(name,)]
            assert paths.read_parquet_files([path])["home"].to_list() == [name]
    finally:
        con.close()
