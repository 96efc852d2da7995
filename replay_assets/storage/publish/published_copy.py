"""The published copy consumers read (SPEC 5): certified tables as Parquet under
``$HOME/published/`` and ``$HOME/published.duckdb`` with views over them.

The views are created once and never rewritten, so a reader holding ``published.duckdb`` open
never blocks the pipeline: a publish only replaces Parquet files (temp file, fsync, rename), and
a reader mid-scan keeps the file it opened. The views hold no path of the home: each finds the
Parquet files in the folder of the ``published.duckdb`` it is read from, so a copied, moved or
restored home serves its own data (SPEC 10).
"""

from __future__ import annotations

import json
from pathlib import Path

import duckdb

from replay_assets.storage.journal import executor as journal
from replay_assets.storage.landing.deliveries import atomic_replace, atomic_write, temp_path
from replay_assets.storage.publish.certify import pointer

VIEWS_VERSION = 4  # 1 held absolute paths: a copied home served the original's files; 2 had no
# evidence; 3 had no record of pruned load dates
HOME_VARIABLE = "replay_assets_home"
# The folder of the database a view is read from, computed when a query binds the view. A table
# function takes constant arguments only (no subquery, no lateral column), and the one constant
# that knows the database file is DuckDB's documented default ``temp_directory``: the file's
# absolute path plus ``.tmp``. A relative path would resolve against the reader's working
# directory (and ``file_search_path`` only after it). When published.duckdb is attached to
# another database, or ``temp_directory`` is set, the reader names the home in a variable; without
# it the query fails instead of reading another home's files.
VIEW_HOME = f"""coalesce(getvariable('{HOME_VARIABLE}'),
    CASE WHEN ends_with(current_setting('temp_directory'), '/published.duckdb.tmp')
         THEN parse_dirpath(current_setting('temp_directory'))
         ELSE error('published.duckdb reads the Parquet files of its own folder: open it as the '
                    || 'database, or SET VARIABLE {HOME_VARIABLE} = ''<home folder>'' first') END)"""
# The evidence a reader needs while a writer holds the warehouse (status, the plan, service
# levels, recovery inspect|plan): small tables, mirrored whole on every refresh under their own
# names. The big ones (raw receipts, staged and rejected events, history, the event registry)
# stay in the warehouse.
EVIDENCE_TABLES = (
    "schema_migrations",
    "manifests",
    "batch_violations",
    "restatement_queue",
    "watermarks",
    "reconciliation",
    "load_dates",
    "load_date_attempts",
    "batch_resolutions",
    "snapshots",
    "partition_status",
    "pointers",
    "commit_markers",
    "candidates",
    "costs",
    "backfills",
    "operations",
    "operation_audit",
    "step_attempts",
    "pruned_load_dates",
)
VIEW_FILES = {
    "current_orders": "published/current_orders.parquet",
    "current_customers": "published/current_customers.parquet",
    "daily_aggregates": "published/daily_aggregates/*.parquet",
    "publications": "published/publications.parquet",
    **{table: f"published/evidence/{table}.parquet" for table in EVIDENCE_TABLES},
}
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
    for table in EVIDENCE_TABLES:  # names from this module only
        _export(con, root / "evidence" / f"{table}.parquet", f"SELECT * FROM {table}")
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
    """Write the views into a new file and rename it over published.duckdb: a reader holding the
    old file keeps it, and the pipeline never opens a file a reader holds."""
    marker = root / f".views-v{VIEWS_VERSION}"
    if marker.exists() or not (root / "publications.parquet").exists():
        return
    target = home / "published.duckdb"
    tmp = temp_path(target)
    for leftover in (tmp, tmp.with_name(f"{tmp.name}.wal")):  # of an attempt a crash cut short
        leftover.unlink(missing_ok=True)
    con = duckdb.connect(str(tmp))
    try:
        # the views are bound when created; the temp file's own name is not published.duckdb
        con.execute(f"SET VARIABLE {HOME_VARIABLE} = ?", [str(home.resolve())])
        for name, relative in VIEW_FILES.items():
            # constants of this module only: DDL takes no bound parameters
            con.execute(
                f"CREATE OR REPLACE VIEW {name} AS SELECT * FROM read_parquet({VIEW_HOME} || '/{relative}')"
            )
    finally:
        con.close()
    atomic_replace(tmp, target)
    atomic_write(marker, b"")
