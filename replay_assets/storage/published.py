"""The published copy consumers read (SPEC 5): certified tables as Parquet under
``$HOME/published/`` and ``$HOME/published.duckdb`` with views over them.

The views are created once and never rewritten, so a reader holding ``published.duckdb`` open
never blocks the pipeline: a publish only replaces Parquet files (temp file, fsync, rename), and
a reader mid-scan keeps the file it opened.
"""

from __future__ import annotations

import json
from pathlib import Path

import duckdb

from replay_assets.storage import journal
from replay_assets.storage.certify import pointer
from replay_assets.storage.landing_area import atomic_replace, atomic_write, temp_path

VIEWS_VERSION = 1
AGGREGATES_SQL = """SELECT * FROM daily_aggregates WHERE CAST(business_date AS VARCHAR) = ?"""
LATEST_AGGREGATE_VERSIONS = """
    SELECT partition_key, max(version) AS version FROM publications
    WHERE asset = 'daily_aggregates' GROUP BY 1"""


def _export(con: duckdb.DuckDBPyConnection, path: Path, sql: str, params: list[object] | None = None) -> None:
    """A query's rows as a Parquet file, written by DuckDB as a stream (never whole in Python),
    to a temp name, fsynced and renamed."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = temp_path(path)
    con.sql(sql, params=params or []).write_parquet(str(tmp))
    atomic_replace(tmp, path)


def refresh(con: duckdb.DuckDBPyConnection, home: Path) -> list[str]:
    """Bring the published copy up to the warehouse's certified state; writes only the files
    whose certified version changed since the last refresh. Returns the files written. Refuses
    (REPLAY_COMMIT_UNKNOWN) while an operator holds an operation: its target is certified state."""
    journal.require_no_hold(con)
    root = home / "published"
    state_path = root / "exported.json"
    done = json.loads(state_path.read_text()) if state_path.exists() else {"current": None, "aggregates": {}}
    written = []
    current = pointer(con)
    if current is not None and done["current"] != current + _snapshot(con, current):
        for table, macro in (("current_orders", "orders_as_of"), ("current_customers", "customers_as_of")):
            _export(con, root / f"{table}.parquet", f"SELECT * FROM {macro}(?)", [current])
            written.append(f"{table}.parquet")
        done["current"] = current + _snapshot(con, current)
    for key, version in con.execute(LATEST_AGGREGATE_VERSIONS).fetchall():
        if done["aggregates"].get(key) != version:
            _export(con, root / "daily_aggregates" / f"business_date={key}.parquet", AGGREGATES_SQL, [key])
            done["aggregates"][key] = version
            written.append(f"daily_aggregates/business_date={key}.parquet")
    if written or not (root / "publications.parquet").exists():
        _export(con, root / "publications.parquet", "SELECT * FROM publications ORDER BY ALL")
        _ensure_placeholders(con, root)
        atomic_write(state_path, json.dumps(done, sort_keys=True).encode())
    _ensure_views(home, root)
    return written


def _snapshot(con: duckdb.DuckDBPyConnection, day: str) -> str:
    row = con.execute("SELECT content_sha256 FROM snapshots WHERE load_date = ?", [day]).fetchall()
    return str(row[0][0]) if row else ""


def _ensure_placeholders(con: duckdb.DuckDBPyConnection, root: Path) -> None:
    """Empty files with the right columns, so every view is valid before the first publication."""
    empty = {
        "current_orders.parquet": "SELECT * FROM current_orders LIMIT 0",
        "current_customers.parquet": "SELECT * FROM current_customers LIMIT 0",
        "daily_aggregates/_schema.parquet": "SELECT * FROM daily_aggregates LIMIT 0",
    }
    for name, sql in empty.items():
        if not (root / name).exists():
            _export(con, root / name, sql)


def _ensure_views(home: Path, root: Path) -> None:
    marker = root / f".views-v{VIEWS_VERSION}"
    if marker.exists() or not (root / "publications.parquet").exists():
        return
    views = {
        "current_orders": root / "current_orders.parquet",
        "current_customers": root / "current_customers.parquet",
        "daily_aggregates": root / "daily_aggregates" / "*.parquet",
        "publications": root / "publications.parquet",
    }
    con = duckdb.connect(str(home / "published.duckdb"))
    try:
        for name, path in views.items():
            # a path cannot be a bound parameter in DDL; it is our own, quoted by DuckDB's rules
            literal = "'" + str(path.resolve()).replace("'", "''") + "'"
            con.execute(f"CREATE OR REPLACE VIEW {name} AS SELECT * FROM read_parquet({literal})")
    finally:
        con.close()
    atomic_write(marker, b"")
