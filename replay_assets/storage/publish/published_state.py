"""The published current state by partition (SPEC 10 "cost by change"): ``current_orders`` as
Parquet files per business date (tombstones, which have none, under ``none``) and
``current_customers`` as one partition, under ``published/current/<entity>/``.

A refresh rewrites only the partitions the latest tables logged a change of since the last
export (``latest_changes``, ``storage/apply/latest.py``), every one when that log cannot say
(the first export, a state read from history instead of the latest tables, a log pruning
shortened). New files get new names; a manifest replaced in one rename after them lists the
files of one certified state, and the views read only what it lists, so each query sees the
state as of one pointer, never a mix of two refreshes. The files of the refresh before stay for
queries that read the previous manifest; older ones are deleted after the new record is
written."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import duckdb

from replay_assets.core.events import canonical_json, sha256_text
from replay_assets.storage.apply import latest
from replay_assets.storage.landing.deliveries import atomic_replace
from replay_assets.storage.publish.certify import pointer

CURRENT = "current"  # under published/
SCHEMA_FILE = "_schema.parquet"  # each entity's empty file with the columns, always listed
MANIFEST = "manifest.parquet"  # (entity, file): the files of the current state
# entity -> (consumer view, history table, as-of macro); constants of this module only
ENTITIES = {
    "orders": ("current_orders", "order_history", "orders_as_of"),
    "customers": ("current_customers", "customer_history", "customers_as_of"),
}
_PART_COLUMN = "_part"
Files = dict[str, dict[str, list[str]]]  # entity -> partition -> file names in its folder


def refresh_current(
    con: duckdb.DuckDBPyConnection, root: Path, done: dict[str, Any], columns: dict[str, str]
) -> list[str]:
    """Bring the current state's partitions to the certified pointer; records the files in
    ``done`` (``current_files``, and ``previous_files`` for the cleanup). ``columns``: per
    entity, the consumer columns of its history rows (the as-of macros' projection)."""
    current = pointer(con)
    if current is None:
        return []
    # the content hash leaves out load dates: a restatement that only moves a row to another
    # load date changes the consumer's rows, not the hash, but it is logged as a change
    state, generation = current + snapshot_digest(con, current), latest.generation(con)
    if done.get("current") == state and done.get("generation") == generation and "current_files" in done:
        return []
    from_latest = latest.holds_as_of(con, current)
    files: Files = {e: dict(p) for e, p in done.get("current_files", {}).items()}
    since = done.get("changes_through")
    changed = latest.changed_parts(con, since) if from_latest and since is not None and files else None
    # names new to this state and generation (a reader's listed files are never replaced by other
    # content), the same for the same refresh in any home: a retry after a crash writes the same
    tag = sha256_text(canonical_json([state, generation, since]))[:12]
    written = []
    for entity, (_view, table, macro) in ENTITIES.items():
        parts = None if changed is None else sorted(changed[entity])
        if parts == []:
            continue
        params: dict[str, object] = {}
        if from_latest:
            source = f"SELECT {columns[entity]} FROM {latest.LATEST[table][0]}"
        else:
            source, params = f"SELECT * FROM {macro}($current)", {"current": current}
        new = _write_parts(
            con, root / CURRENT / entity, source, entity=entity, parts=parts, tag=tag, params=params
        )
        kept = {} if parts is None else {p: f for p, f in files.get(entity, {}).items() if p not in parts}
        files[entity] = {**kept, **new}
        written.append(f"current {entity}: {'every partition' if parts is None else len(parts)}")
    done["previous_files"] = done.get("current_files", {})
    done["current_files"] = files
    done["changes_through"] = generation if from_latest else None
    done["current"], done["generation"] = state, generation
    return written


def _write_parts(
    con: duckdb.DuckDBPyConnection,
    folder: Path,
    source: str,
    *,
    entity: str,
    parts: list[str] | None,
    tag: str,
    params: dict[str, object],
) -> dict[str, list[str]]:
    """The rows of ``source`` in ``parts`` (every partition: None), one pass, written by
    DuckDB partitioned into a scratch folder, then each file fsynced and renamed into
    ``folder`` under a new name. A requested partition with no rows gets no file."""
    scratch = folder / f".refresh-{tag}"
    shutil.rmtree(scratch, ignore_errors=True)  # of an attempt a crash cut short
    folder.mkdir(parents=True, exist_ok=True)
    part_sql = latest.LATEST[ENTITIES[entity][1]][3]
    where = "" if parts is None else f"WHERE list_contains($parts, {_PART_COLUMN})"
    query = f"SELECT * FROM (SELECT *, {part_sql} AS {_PART_COLUMN} FROM ({source})) {where}"
    arguments = params if parts is None else {**params, "parts": parts}
    con.sql(query, params=arguments).write_parquet(str(scratch), partition_by=[_PART_COLUMN])
    out: dict[str, list[str]] = {}
    for directory in sorted(scratch.iterdir()) if scratch.exists() else []:
        part = directory.name.removeprefix(f"{_PART_COLUMN}=")
        for n, path in enumerate(sorted(directory.glob("*.parquet"))):
            name = f"{part}.{tag}.{n}.parquet"
            atomic_replace(path, folder / name)
            out.setdefault(part, []).append(name)
    shutil.rmtree(scratch, ignore_errors=True)
    return out


def write_manifest(con: duckdb.DuckDBPyConnection, root: Path, done: dict[str, Any]) -> None:
    """The list of files that make up the current state, replaced in one rename: what the views
    read at query time (``view_sql``)."""
    rows = [
        (entity, name)
        for entity in ENTITIES
        for name in (
            SCHEMA_FILE,
            *sorted(n for names in done.get("current_files", {}).get(entity, {}).values() for n in names),
        )
    ]
    path = root / CURRENT / MANIFEST
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    con.execute("CREATE OR REPLACE TEMP TABLE _manifest (entity VARCHAR, file VARCHAR)")
    con.executemany("INSERT INTO _manifest (entity, file) VALUES (?, ?)", rows)
    con.sql("SELECT * FROM _manifest ORDER BY ALL").write_parquet(str(tmp))
    con.execute("DROP TABLE _manifest")
    atomic_replace(tmp, path)


def view_sql(entity: str, home_sql: str) -> str:
    """The view of ``entity``'s current state: the files its folder holds that the manifest lists
    (a refresh's new files are in place before the manifest names them, and the files of the
    refresh before stay until the next one), so each query reads one certified state, and a
    connection held open sees each new one. ``home_sql``: the home folder, as SQL."""
    folder = f"{home_sql} || '/published/{CURRENT}"
    return f"""SELECT * EXCLUDE (filename)
        FROM read_parquet({folder}/{entity}/*.parquet', filename = true)
        WHERE parse_filename(filename) IN (
            SELECT file FROM read_parquet({folder}/{MANIFEST}') WHERE entity = '{entity}')"""


def ensure_schema_files(con: duckdb.DuckDBPyConnection, root: Path, columns: dict[str, str]) -> None:
    for entity, (_view, table, _macro) in ENTITIES.items():
        path = root / CURRENT / entity / SCHEMA_FILE
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f".{path.name}.tmp")
            con.sql(f"SELECT {columns[entity]} FROM {table} LIMIT 0").write_parquet(str(tmp))
            atomic_replace(tmp, path)


def drop_unlisted(root: Path, done: dict[str, Any]) -> None:
    """After the record names the new files: every file neither it nor the refresh before lists
    (older refreshes, an attempt a crash cut short), and the single files of views before v6."""
    for entity in ENTITIES:
        listed = {
            name
            for key in ("current_files", "previous_files")
            for names in done.get(key, {}).get(entity, {}).values()
            for name in names
        }
        folder = root / CURRENT / entity
        for path in folder.glob("*.parquet") if folder.exists() else []:
            if path.name != SCHEMA_FILE and path.name not in listed:
                path.unlink(missing_ok=True)
        for scratch in folder.glob(".refresh-*") if folder.exists() else []:
            shutil.rmtree(scratch, ignore_errors=True)
    for old in ("current_orders.parquet", "current_customers.parquet"):
        (root / old).unlink(missing_ok=True)


def snapshot_digest(con: duckdb.DuckDBPyConnection, day: str) -> str:
    row = con.execute("SELECT content_sha256 FROM snapshots WHERE load_date = ?", [day]).fetchall()
    return str(row[0][0]) if row else ""
