"""The published copy: certified tables as Parquet with views, readable while the pipeline runs."""

import subprocess
import sys
from pathlib import Path

import duckdb

from replay_assets.scenarios import seed001
from replay_assets.session import Session
from replay_assets_tests.helpers import settings_for

READER = """
import duckdb, pathlib, sys, time
con = duckdb.connect(sys.argv[1], read_only=True)
stop, seen = pathlib.Path(sys.argv[2]), set()
print("ready", flush=True)
while not stop.exists():
    seen.add(con.execute("SELECT count(*) FROM current_orders WHERE status = 'active'").fetchall()[0][0])
    time.sleep(0.005)  # pacing only, so the reader does not starve the pipeline of CPU
seen.add(con.execute("SELECT count(*) FROM current_orders WHERE status = 'active'").fetchall()[0][0])
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
