"""The landing's rows in the workers' Parquet files (schema v13, ``storage/db/segments.py``):
a registered file is evidence, read through ``staged_events`` and ``raw_receipts`` from any home
the warehouse is opened at; a file no register row names is never read and the next writer
removes it (a landing rolled back after its moves, a relanded batch, a pruned date); a registered
file that is gone fails the reads that need it, naming it, instead of dropping its rows.

Use cases over real DuckDB files and real files; no Dagster."""

from __future__ import annotations

import errno
import hashlib
import json
import os
import shutil
from pathlib import Path

import duckdb
import pytest

from replay_assets.entrypoints.cli import main
from replay_assets.storage.db import segments
from replay_assets.storage.landing import ingest
from replay_assets.usecases.context import Pipeline
from replay_assets.usecases.land import land
from replay_assets_tests.helpers import drive, settings_for
from replay_assets_tests.storage.test_bad_input import D1, D2, D3, NOW, deliver, event, make_pipeline, rows

D4 = "2026-01-04"
VIEWS = ("SELECT * FROM staged_events ORDER BY ALL", "SELECT * FROM raw_receipts ORDER BY ALL")


def line(*args: object, **kwargs: object) -> str:
    """An event as the grammar certifies it (compact), so both kinds of file are written."""
    return json.dumps(json.loads(event(*args, **kwargs)), separators=(",", ":"))  # type: ignore[arg-type]


def files(home: Path) -> set[str]:
    """The segment files under the home, relative to its segments folder (schema files aside)."""
    base = home / segments.FOLDER
    return {
        str(f.relative_to(base))
        for kind in segments.KINDS
        for f in (base / kind.folder).glob("*/*")
        if f.is_file()
    }


def registered(p: Pipeline) -> set[str]:
    return {str(r[0]) for r in rows(p, "SELECT path FROM landing_segments")}


def read(p: Pipeline) -> list[list[tuple[object, ...]]]:
    """Both views as a reader sees them (the read-only port: it never sweeps)."""
    with p.reader.read() as con:
        return [con.execute(sql).fetchall() for sql in VIEWS]


def test_every_landed_file_is_registered_and_read_once(tmp_path: Path) -> None:
    p = make_pipeline(tmp_path)
    deliver(p, D1, "b1", [line(1, "o1"), line(2, "o2")])
    deliver(p, D1, "b2", [line(3, "o3")])
    land(p, D1)
    kept = registered(p)
    assert kept and kept == files(tmp_path)
    staged, receipts = read(p)
    assert len(staged) == 3 and len(receipts) == 3
    for path, size, digest in rows(p, "SELECT path, bytes, sha256 FROM landing_segments"):
        data = (tmp_path / segments.FOLDER / path).read_bytes()
        assert (len(data), hashlib.sha256(data).hexdigest()) == (size, digest)


def test_a_landing_rolled_back_after_its_moves_leaves_no_evidence_and_its_files_go(tmp_path: Path) -> None:
    """A failure after the files were moved into the home (here: recording the manifest) rolls
    the landing back: no register row names its files, so no view reads them, and the next
    writer removes them. Landing again lands the batch whole."""
    p = make_pipeline(tmp_path)
    deliver(p, D1, "b1", [line(1, "o1"), line(2, "o2")])
    with pytest.MonkeyPatch.context() as patch:

        def refuse(*_args: object, **_kwargs: object) -> None:
            raise OSError("disk full")

        patch.setattr(ingest, "_insert_manifest", refuse)
        with pytest.raises(OSError, match="disk full"):
            land(p, D1)
    left = files(tmp_path)
    assert left  # moved before the failure, never registered
    assert read(p) == [[], []]
    assert registered(p) == set()  # a writer opened the warehouse: the orphans are gone
    assert files(tmp_path) == set()
    land(p, D1)
    staged, receipts = read(p)
    assert len(staged) == 2 and len(receipts) == 2


def test_a_file_no_register_row_names_is_not_read_and_the_next_writer_removes_it(tmp_path: Path) -> None:
    p = make_pipeline(tmp_path)
    deliver(p, D1, "b1", [line(1, "o1"), line(2, "o2")])
    land(p, D1)
    before = read(p)
    (kept, *_) = sorted(registered(p))
    stray = tmp_path / segments.FOLDER / Path(kept).with_name("stray.parquet")
    shutil.copyfile(tmp_path / segments.FOLDER / kept, stray)
    assert read(p) == before
    assert "stray.parquet" not in {Path(f).name for f in registered(p)}  # a writer opened it
    assert not stray.exists()


def test_a_registered_file_that_is_gone_fails_the_reads_naming_it(tmp_path: Path) -> None:
    p = make_pipeline(tmp_path)
    deliver(p, D1, "b1", [line(1, "o1"), line(2, "o2")])
    land(p, D1)
    kept = max(registered(p))  # the staged events' file
    assert kept.startswith("staged/")
    (tmp_path / segments.FOLDER / kept).unlink()
    with p.reader.read() as con, pytest.raises(duckdb.Error, match=f"segment file is missing.*{kept}"):
        con.execute("SELECT count(*) FROM staged_events")
    with pytest.raises(duckdb.Error):  # the apply reads the date's files by name
        drive(p)


def test_a_home_moved_elsewhere_reads_its_segments(tmp_path: Path) -> None:
    p = make_pipeline(tmp_path / "here")
    deliver(p, D1, "b1", [line(1, "o1"), line(2, "o2")])
    drive(p)
    before = read(p)
    shutil.move(tmp_path / "here", tmp_path / "there")
    moved = make_pipeline(tmp_path / "there")
    assert read(moved) == before
    deliver(moved, D2, "b2", [line(3, "o1", amount_minor=5)])
    drive(moved)
    assert rows(moved, "SELECT order_id, amount_minor FROM current_orders ORDER BY 1")[0] == ("o1", 5)


def test_the_pruned_dates_files_leave_the_home(tmp_path: Path) -> None:
    p = Pipeline(settings_for(tmp_path, NOW, retention_load_dates=2))
    for n, day in enumerate((D1, D2, D3, D4)):
        deliver(p, day, f"b{n}", [line(2 * n + 1, "o1", amount_minor=n), line(2 * n + 2, f"o{n + 2}")])
    drive(p)
    assert rows(p, "SELECT load_date FROM pruned_load_dates ORDER BY 1") == [(D1,), (D2,)]
    assert rows(p, "SELECT DISTINCT load_date FROM landing_segments ORDER BY 1") == [(D3,), (D4,)]
    assert files(tmp_path) == registered(p)
    assert {Path(f).parent.name for f in files(tmp_path)} == {D3, D4}
    assert (
        rows(p, "SELECT raw_receipts, staged_events FROM pruned_load_dates ORDER BY load_date")
        == [(2, 2)] * 2
    )


def test_reconcile_reads_every_registered_file_and_names_the_damaged_ones(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    p = make_pipeline(tmp_path)
    deliver(p, D1, "b1", [line(1, "o1"), line(2, "o2")])
    drive(p)
    home = ["--home", str(tmp_path)]
    assert main(["reconcile", *home]) == 0
    assert "segment files: 2 checked, 0 damaged" in capsys.readouterr().out
    changed, gone = sorted(registered(p))
    target = tmp_path / segments.FOLDER / changed
    data = bytearray(target.read_bytes())
    data[len(data) // 2] ^= 1  # one bit, the size unchanged
    target.write_bytes(bytes(data))
    (tmp_path / segments.FOLDER / gone).rename(tmp_path / "elsewhere.parquet")
    assert main(["reconcile", *home]) == 1
    out = capsys.readouterr().out
    assert "segment files: 2 checked, 2 damaged" in out
    assert f"{changed}: sha256 differs from the registered one" in out
    assert f"{gone}: missing" in out


def test_a_plain_duckdb_session_on_the_warehouse_reads_the_views_without_naming_the_home(
    tmp_path: Path,
) -> None:
    """An operator's own DuckDB session (no variable set) reads the landing views from the
    warehouse file's folder; attached under another name it must name the home, or it fails
    saying so rather than read another home's files."""
    p = make_pipeline(tmp_path / "home")
    deliver(p, D1, "b1", [line(1, "o1"), line(2, "o2")])
    land(p, D1)
    expected = read(p)
    warehouse = tmp_path / "home" / "warehouse.duckdb"
    with duckdb.connect(str(warehouse), read_only=True) as con:
        assert [con.execute(sql).fetchall() for sql in VIEWS] == expected
    with duckdb.connect() as con:
        con.execute("ATTACH ? AS w (READ_ONLY)", [str(warehouse)])
        con.execute("USE w")
        with pytest.raises(duckdb.Error, match=f"SET VARIABLE {segments.HOME_VARIABLE}"):
            con.execute(VIEWS[0]).fetchall()
        con.execute(f"SET VARIABLE {segments.HOME_VARIABLE} = ?", [str(tmp_path / "home")])
        assert [con.execute(sql).fetchall() for sql in VIEWS] == expected


def test_a_file_on_another_file_system_is_copied_in_whole(tmp_path: Path) -> None:
    """Where a rename crosses file systems (EXDEV), the file is copied under a temporary name,
    made durable and renamed into place: the registered bytes are the worker's."""
    p = make_pipeline(tmp_path)
    deliver(p, D1, "b1", [line(1, "o1"), line(2, "o2")])
    renamed = os.rename

    def across(source: object, target: object) -> None:
        if str(target).endswith(".parquet") and f"/{segments.FOLDER}/" in str(target):
            raise OSError(errno.EXDEV, "Invalid cross-device link")
        renamed(source, target)  # type: ignore[arg-type]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(segments.os, "rename", across)
        land(p, D1)
    assert registered(p) == files(tmp_path)
    for path, size, digest in rows(p, "SELECT path, bytes, sha256 FROM landing_segments"):
        data = (tmp_path / segments.FOLDER / path).read_bytes()
        assert (len(data), hashlib.sha256(data).hexdigest()) == (size, digest)
    staged, receipts = read(p)
    assert len(staged) == 2 and len(receipts) == 2
