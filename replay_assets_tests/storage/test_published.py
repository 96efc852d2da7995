"""The published copy: certified tables as Parquet with views, readable while the pipeline runs."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from replay_assets.demo.scenarios import seed001
from replay_assets.entrypoints.session import Session
from replay_assets.storage.publish.published_copy import EVIDENCE_TABLES
from replay_assets.usecases.context import Pipeline
from replay_assets.usecases.recover import refresh_published
from replay_assets_tests.helpers import drive, settings_for

READER = """
import duckdb, pathlib, sys, time
con = duckdb.connect(sys.argv[1], read_only=True)
stop, seen = pathlib.Path(sys.argv[2]), set()
def active():
    try:
        seen.add(con.execute("SELECT count(*) FROM current_orders WHERE status = 'active'").fetchall()[0][0])
    except duckdb.IOException as error:  # a swap between the query's listing and its reads: run again
        assert "No such file" in str(error) or "No files found" in str(error), error
print("ready", flush=True)
while not stop.exists():
    active()
    time.sleep(0.005)  # pacing only, so the reader does not starve the pipeline of CPU
active()
print(sorted(seen), flush=True)
"""


def test_a_reader_holding_published_duckdb_never_blocks_a_full_run(tmp_path: Path) -> None:
    session = Session(settings_for(tmp_path, seed001.NOW), tmp_path / "dagster")
    seed001.deliver_baseline(session.settings.landing)
    assert not session.run().failed
    reader = subprocess.Popen(
        [sys.executable, "-c", READER, str(tmp_path / "published.duckdb"), str(tmp_path / "stop")],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert reader.stdout is not None and reader.stdout.readline().strip() == "ready"
    seed001.deliver_cdc(session.settings.landing, "B20260921-CDC-A", "2026-09-21", "2026-09-21T08:12:00Z")
    summary = session.run()
    (tmp_path / "stop").touch()
    seen = reader.stdout.readline().strip()
    assert reader.wait(timeout=60) == 0
    session.close()
    assert [r[1] for r in summary.runs] and not summary.failed
    assert seen == "[8, 9]" or seen == "[9]"  # only certified states: baseline (8 lines), final (9)
    assert seen.endswith("9]")


def test_published_views_show_only_certified_rows(tmp_path: Path) -> None:
    session = Session(settings_for(tmp_path, seed001.NOW), tmp_path / "dagster")
    seed001.deliver_baseline(session.settings.landing)
    session.run()
    seed001.deliver_breaking(session.settings.landing, "2026-09-21")
    session.run()
    session.close()
    con = duckdb.connect(str(tmp_path / "published.duckdb"), read_only=True)
    assert (
        con.execute("SELECT max(load_date) FROM current_orders").fetchall()[0][0].isoformat() == "2026-09-20"
    )
    assert con.execute("SELECT sum(amount_minor) FROM daily_aggregates").fetchall() == [(690,)]
    assert con.execute("SELECT count(*) FROM publications WHERE asset = 'current_orders'").fetchall() == [
        (1,)
    ]


def _active_lines(published_duckdb: Path) -> int:
    con = duckdb.connect(str(published_duckdb), read_only=True)
    try:
        return int(
            con.execute("SELECT count(*) FROM current_orders WHERE status = 'active'").fetchall()[0][0]
        )
    finally:
        con.close()


def test_a_copied_home_serves_its_own_data_from_any_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    original, copy, elsewhere = tmp_path / "original", tmp_path / "copy", tmp_path / "elsewhere"
    pipeline = Pipeline(settings_for(original, seed001.NOW))
    seed001.deliver_baseline(pipeline.settings.landing)
    drive(pipeline)
    shutil.copytree(original, copy)
    seed001.deliver_cdc(pipeline.settings.landing, "B20260921-CDC-A", "2026-09-21", "2026-09-21T08:12:00Z")
    drive(pipeline)  # the original moves on: baseline (8 active lines) + CDC = 9
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert _active_lines(original / "published.duckdb") == 9
    assert _active_lines(copy / "published.duckdb") == 8
    monkeypatch.chdir(original)  # a working directory holding another home's copy changes nothing
    assert _active_lines(copy / "published.duckdb") == 8
    shutil.rmtree(original)
    monkeypatch.chdir(tmp_path)
    assert _active_lines(Path("copy") / "published.duckdb") == 8
    con = duckdb.connect(str(copy / "published.duckdb"), read_only=True)
    assert con.execute("SELECT sum(amount_minor) FROM daily_aggregates").fetchall() == [(690,)]
    assert con.execute("SELECT count(*) FROM publications").fetchall()[0][0] > 0
    con.close()


def test_attached_published_duckdb_reads_the_home_its_reader_names_or_fails(tmp_path: Path) -> None:
    pipeline = Pipeline(settings_for(tmp_path / "home", seed001.NOW))
    seed001.deliver_baseline(pipeline.settings.landing)
    drive(pipeline)
    con = duckdb.connect()  # a consumer's own session, published.duckdb attached to it
    con.execute("ATTACH ? AS pub (READ_ONLY)", [str(tmp_path / "home" / "published.duckdb")])
    with pytest.raises(duckdb.InvalidInputException, match="SET VARIABLE replay_assets_home"):
        con.execute("SELECT count(*) FROM pub.current_orders").fetchall()
    con.execute("SET VARIABLE replay_assets_home = ?", [str(tmp_path / "home")])
    assert con.execute("SELECT count(*) FROM pub.current_orders WHERE status = 'active'").fetchall() == [(8,)]
    con.close()


def test_new_views_replace_published_duckdb_while_a_reader_holds_it(tmp_path: Path) -> None:
    pipeline = Pipeline(settings_for(tmp_path, seed001.NOW))
    seed001.deliver_baseline(pipeline.settings.landing)
    drive(pipeline)
    reader = duckdb.connect(str(tmp_path / "published.duckdb"), read_only=True)
    before = (tmp_path / "published.duckdb").stat().st_ino
    record = tmp_path / "published" / "exported.json"
    exported = json.loads(record.read_text())
    exported["views"] = "of an older version"
    record.write_text(json.dumps(exported))
    refresh_published(pipeline)
    assert (tmp_path / "published.duckdb").stat().st_ino != before  # a new file, renamed over it
    assert json.loads(record.read_text())["views"] != "of an older version"
    assert reader.execute("SELECT count(*) FROM current_orders WHERE status = 'active'").fetchall() == [(8,)]
    reader.close()
    assert _active_lines(tmp_path / "published.duckdb") == 8


def _evidence_files(home: Path) -> dict[str, int]:
    """Each mirrored evidence table's file and its inode (a rewrite renames a new file over it)."""
    return {p.stem: p.stat().st_ino for p in (home / "published" / "evidence").glob("*.parquet")}


def _mirrors_the_warehouse(p: Pipeline) -> None:
    """Every evidence view of published.duckdb holds exactly its warehouse table's rows."""
    copy = duckdb.connect(str(p.settings.home / "published.duckdb"), read_only=True)
    try:
        with p.warehouse.connect() as con:
            for table in EVIDENCE_TABLES:
                published = copy.execute(f"SELECT * FROM {table}").fetchall()
                warehouse = con.execute(f"SELECT * FROM {table}").fetchall()
                assert sorted(map(repr, published)) == sorted(map(repr, warehouse)), table
    finally:
        copy.close()


def test_a_refresh_rewrites_only_the_evidence_tables_that_changed(tmp_path: Path) -> None:
    p = Pipeline(settings_for(tmp_path, seed001.NOW))
    seed001.deliver_baseline(p.settings.landing)
    drive(p)
    refresh_published(p)  # the journal completes an operation after the refresh it ran
    first = _evidence_files(tmp_path)
    assert set(first) == set(EVIDENCE_TABLES)
    refresh_published(p)  # nothing changed since the last refresh: no file is written
    assert _evidence_files(tmp_path) == first
    _mirrors_the_warehouse(p)

    with p.warehouse.transaction() as con:  # one table changes: an operator's note on a backfill
        con.execute(
            "INSERT INTO backfills VALUES ('bf1', 'daily_aggregates', '2026-09-19', '2026-09-20', "
            "'backfill', 'a note', 'ops', TIMESTAMPTZ '2026-09-20 12:00:00+00')"
        )
    refresh_published(p)
    after = _evidence_files(tmp_path)
    assert {t for t in EVIDENCE_TABLES if after[t] != first[t]} == {"backfills"}
    _mirrors_the_warehouse(p)
