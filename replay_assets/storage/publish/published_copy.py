"""The published copy consumers read: certified tables as Parquet under
``$HOME/published/`` and ``$HOME/published.duckdb`` with views over them.

The views are created once and never rewritten, so a reader holding ``published.duckdb`` open
never blocks the pipeline: a publish only replaces Parquet files (temp file, fsync, rename), and
a reader mid-scan keeps the file it opened. The views hold no path of the home: each finds the
Parquet files in the folder of the ``published.duckdb`` it is read from, so a copied, moved or
restored home serves its own data.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import duckdb

from replay_assets.core.events import canonical_json, sha256_text
from replay_assets.storage.apply.reading import certified_pointer, pruned_through
from replay_assets.storage.db.sql import DuckDBSql
from replay_assets.storage.home.files import atomic_replace, atomic_write, temp_path
from replay_assets.storage.home.home_files import read_own_file
from replay_assets.storage.home.paths import glob_literal_sql
from replay_assets.storage.publish import published_state
from replay_assets.storage.rules.published import AS_OF_HISTORY, ENTITIES

VIEWS_VERSION = 8  # 1 held absolute paths: a copied home served the original's files; 2 had no
# evidence; 3 had no record of pruned load dates; 4 had no as-of access; 5 read the current state
# from one file rewritten whole; 6 filtered a glob taken when a query binds by a manifest read when
# it runs, so a refresh between the two showed a state never certified; 7 read the home's folder
# as a glob pattern, so a home named g[A]h served the files of a home gAh beside it
HOME_VARIABLE = "replay_assets_home"
EXPORTED_STATE_BYTES = 64 << 20  # the refresh's record: about 40 bytes per business date
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
GLOB_HOME = glob_literal_sql(VIEW_HOME)  # the folder as the literal start of a file pattern
# An as-of read at or before the last pruned load date fails instead of answering from a state
# pruning did not keep (the warehouse's export refuses it the same way).
BEHIND_HORIZON_GUARD = f"""(SELECT CASE WHEN CAST(d AS DATE) <= horizon
        THEN error('REPLAY_BEHIND_HORIZON: the state as of ' || CAST(d AS VARCHAR) || ' is behind the '
                   || 'retention horizon (load dates up to ' || CAST(horizon AS VARCHAR) || ' were pruned)')
        ELSE true END
    FROM (SELECT max(CAST(value AS DATE)) AS horizon
          FROM read_parquet({GLOB_HOME} || '/published/evidence/pointers.parquet')
          WHERE name = 'pruned_through'))"""
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
    "batch_relandings",
    "upcast_events",
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
VIEW_FILES = {  # the current state's views read its live generation (``published_state.py``)
    "daily_aggregates": "published/daily_aggregates/*.parquet",
    "publications": "published/publications.parquet",
    **{table: f"published/evidence/{table}.parquet" for table in EVIDENCE_TABLES},
}
CONSUMER_COLUMNS = {entity: columns for entity, (_, _, columns, _) in AS_OF_HISTORY.items()}
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
    whose certified version changed since the last refresh. Returns the files written. The
    caller refuses first while an operator holds an operation (its target is certified state:
    ``JournalReading.require_no_hold``)."""
    root = home / "published"
    state_path = root / "exported.json"
    recorded = read_own_file(root, state_path.name, EXPORTED_STATE_BYTES)
    done = json.loads(recorded) if recorded else {"current": None, "aggregates": {}}
    written = published_state.refresh_current(con, root, done, CONSUMER_COLUMNS)
    published_state.ensure_schema_files(con, root, CONSUMER_COLUMNS)
    published_state.publish_generation(root, done)  # after the files it links
    for key, version in con.execute(LATEST_AGGREGATE_VERSIONS).fetchall():
        if done["aggregates"].get(key) != version:
            _export(con, root / "daily_aggregates" / f"business_date={key}.parquet", AGGREGATES_SQL, [key])
            done["aggregates"][key] = version
            written.append(f"daily_aggregates/business_date={key}.parquet")
    written += _refresh_history(con, root / "history", done)
    if written or not (root / "publications.parquet").exists():
        _export(con, root / "publications.parquet", "SELECT * FROM publications ORDER BY ALL")
        _ensure_placeholders(con, root)
    _refresh_evidence(con, root / "evidence", done.setdefault("evidence", {}))
    _drop_covered_history(root / "history", done)
    _ensure_views(home, root, done)
    record = json.dumps(done, sort_keys=True).encode()
    if record != recorded:  # once, after every file it names is in place
        atomic_write(state_path, record)
    published_state.drop_unlisted(root, done)
    return written


def _refresh_evidence(con: duckdb.DuckDBPyConnection, root: Path, marks: dict[str, str]) -> None:
    """Each evidence table whose content changed since the refresh that wrote its file, mirrored
    whole; an unchanged one keeps its file. A table's mark is its columns, row count and two
    order-free sums of its rows' hashes: any row added, removed or changed moves it."""
    for table in EVIDENCE_TABLES:  # names from this module only
        path = root / f"{table}.parquet"
        columns = [(c[0], str(c[1])) for c in con.execute(f"SELECT * FROM {table} LIMIT 0").description]
        sums = con.execute(
            f"""SELECT count(*), bit_xor(h), CAST(sum(CAST(h AS HUGEINT)) AS VARCHAR)
            FROM (SELECT hash(*COLUMNS(*)) AS h FROM {table})"""
        ).fetchall()[0]
        mark = sha256_text(canonical_json([columns, sums[0], str(sums[1]), sums[2]]))
        if marks.get(table) != mark or not path.exists():
            _export(con, path, f"SELECT * FROM {table}")
            marks[table] = mark


def _refresh_history(con: duckdb.DuckDBPyConnection, root: Path, done: dict[str, Any]) -> list[str]:
    """The as-of files: the base when the horizon moved, each certified date's rows when its
    snapshot changed; files of dates behind the horizon go after the base that covers them."""
    written = []
    horizon, current = pruned_through(DuckDBSql(con)), certified_pointer(DuckDBSql(con)) or ""
    changes: dict[str, str] = done.setdefault("history", {})
    if horizon and done.get("history_base") != horizon:
        for entity, (table, _, columns, key) in AS_OF_HISTORY.items():
            base = f"""SELECT {columns} FROM {table} WHERE load_date <= ?
                QUALIFY row_number() OVER (PARTITION BY {key} ORDER BY load_date DESC) = 1"""
            _export(con, root / entity / f"base-{horizon}.parquet", base, [horizon])
        done["history_base"] = horizon
        written.append("history base")
    # a date's rows change with its snapshot, or without (a restatement that moves a row to
    # another load date changes no content hash): the newest change logged for it says so
    certified = con.execute(
        """SELECT s.load_date, s.content_sha256 || ':' || coalesce(CAST(c.generation AS VARCHAR), '')
        FROM snapshots s LEFT JOIN (
            SELECT load_date, max(generation) AS generation FROM latest_changes GROUP BY 1
        ) c USING (load_date)
        WHERE s.load_date > ? AND s.load_date <= ? ORDER BY 1""",
        [horizon, current],
    ).fetchall()
    for day, digest in certified:
        if changes.get(day) != digest:
            for entity, (table, _, columns, _key) in AS_OF_HISTORY.items():
                rows = f"SELECT {columns} FROM {table} WHERE load_date = ?"
                _export(con, root / entity / f"load_date={day}.parquet", rows, [day])
            changes[day] = digest
            written.append(f"history load_date={day}")
    return written


def _drop_covered_history(root: Path, done: dict[str, Any]) -> None:
    """Once the evidence says where the horizon is: the older bases and the files of the dates the
    newest base covers. Until then every file stays, so the union answers every date inside the
    horizon either way (each file holds true history rows; the newest row up to a date wins)."""
    horizon = done.get("history_base") or ""
    for entity in AS_OF_HISTORY:
        for path in (root / entity).glob("*.parquet"):
            stem = path.stem
            day = stem.removeprefix("base-").removeprefix("load_date=")
            if (stem.startswith("base-") and day != horizon) or (
                stem.startswith("load_date=") and day <= horizon
            ):
                path.unlink(missing_ok=True)
    for day in [d for d in done.get("history", {}) if d <= horizon]:
        del done["history"][day]


def _ensure_placeholders(con: duckdb.DuckDBPyConnection, root: Path) -> None:
    """Empty files with the right columns, so every view is valid before the first publication
    (the current state's are in every generation: ``published_state.publish_generation``)."""
    empty = {
        "daily_aggregates/_schema.parquet": "SELECT * FROM daily_aggregates LIMIT 0",
        "history/orders/_schema.parquet": "SELECT * FROM orders_as_of('') LIMIT 0",
        "history/customers/_schema.parquet": "SELECT * FROM customers_as_of('') LIMIT 0",
    }
    for name, sql in empty.items():
        if not (root / name).exists():
            _export(con, root / name, sql)


def _view_statements() -> list[str]:
    """The DDL of published.duckdb: constants of this module only (DDL takes no bound
    parameters)."""
    statements = [
        f"CREATE OR REPLACE VIEW {name} AS SELECT * FROM read_parquet({GLOB_HOME} || '/{relative}')"
        for name, relative in VIEW_FILES.items()
    ]
    for entity, (view, _table, _macro) in ENTITIES.items():
        statements.append(f"CREATE OR REPLACE VIEW {view} AS {published_state.view_sql(entity, GLOB_HOME)}")
    for entity, (_, macro, _, key) in AS_OF_HISTORY.items():
        statements.append(f"""CREATE OR REPLACE MACRO {macro}(d) AS TABLE
            SELECT * FROM read_parquet({GLOB_HOME} || '/published/history/{entity}/*.parquet')
            WHERE load_date <= CAST(d AS DATE) AND {BEHIND_HORIZON_GUARD}
            QUALIFY row_number() OVER (PARTITION BY {key} ORDER BY load_date DESC) = 1""")
    return statements


def _ensure_views(home: Path, root: Path, done: dict[str, Any]) -> None:
    """When the views changed (a new views version, or none yet): write them into a new file and
    rename it over published.duckdb. A reader holding the old file keeps it; the pipeline never
    opens a file a reader holds."""
    if not (root / "publications.parquet").exists():
        return
    statements = _view_statements()
    text = sha256_text(canonical_json([VIEWS_VERSION, statements]))
    target = home / "published.duckdb"
    if done.get("views") == text and target.exists():
        return
    tmp = temp_path(target)
    for leftover in (tmp, tmp.with_name(f"{tmp.name}.wal")):  # of an attempt a crash cut short
        leftover.unlink(missing_ok=True)
    con = duckdb.connect(str(tmp))
    try:
        # the views are bound when created; the temp file's own name is not published.duckdb
        con.execute(f"SET VARIABLE {HOME_VARIABLE} = ?", [str(home.resolve())])
        for statement in statements:
            con.execute(statement)
    finally:
        con.close()
    atomic_replace(tmp, target)
    done["views"] = text
    for marker in root.glob(".views-v*"):  # how versions 1 to 5 recorded theirs
        marker.unlink(missing_ok=True)
