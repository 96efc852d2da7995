"""The published current state by cohort (cost by change: a refresh rewrites what changed):
``current_orders`` and ``current_customers`` as Parquet files per cohort, the load date that wrote
each row, under ``published/current/<entity>/``. A day's new keys join one new cohort and leave
every other file as it was, however many business dates they fall on; a key a day changes leaves
its old cohort, which is rewritten. Once the retention horizon has passed a whole month (no load
date of it can be applied again), its cohorts are merged into one file for the month, so the
files stay about a month's worth of days plus one a month.

A refresh rewrites only the cohorts the latest tables logged a change of since the last export
(``latest_changes``, ``storage/apply/latest.py``), and the months the horizon closed since, every
one when that log cannot say (the first export, a state read from history instead of the latest
tables, a log pruning shortened). New files get new names. The files of one certified state are
then hard-linked into a generation folder under names no other generation uses, and
``published/current/live``, a symlink, is swapped to it in one rename: the views read ``live``, so
a query reads one certified state whole or, when a swap falls between its file listing and its
reads, fails and can be run again; it never sees a mix of two states. The generation before
stays; older ones, and the files neither of the two lists, are deleted after the new record is
written."""

from __future__ import annotations

import errno
import os
import shutil
from pathlib import Path
from typing import Any

import duckdb

from replay_assets.core.events import canonical_json, sha256_text
from replay_assets.storage.apply import latest
from replay_assets.storage.apply.reading import certified_pointer, pruned_through
from replay_assets.storage.db.sql import DuckDBSql
from replay_assets.storage.home.files import atomic_replace, fsync_folder
from replay_assets.storage.rules.latest import COHORT, LATEST
from replay_assets.storage.rules.published import ENTITIES

CURRENT = "current"  # under published/
SCHEMA_FILE = "_schema.parquet"  # each entity's empty file with the columns, always listed
LIVE = "live"  # under current/: a symlink to the generation folder the views read
GENERATION_PREFIX = "gen-"  # current/gen-<tag>/<entity>/<tag>.<file>: hard links to the files
_PART_COLUMN = "_part"
LAYOUT = "cohort"  # what a file holds (a record without it listed files by business date)
Files = dict[str, dict[str, list[str]]]  # entity -> partition -> file names in its folder


def refresh_current(
    con: duckdb.DuckDBPyConnection, root: Path, done: dict[str, Any], columns: dict[str, str]
) -> list[str]:
    """Bring the current state's partitions to the certified pointer; records the files in
    ``done`` (``current_files``, and ``previous_files`` for the cleanup). ``columns``: per
    entity, the consumer columns of its history rows (the as-of macros' projection)."""
    current = certified_pointer(DuckDBSql(con))
    if current is None:
        return []
    # the content hash leaves out load dates: a restatement that only moves a row to another
    # load date changes the consumer's rows, not the hash, but it is logged as a change
    state, generation = current + snapshot_digest(con, current), latest.generation(DuckDBSql(con))
    if not _all_present(root, done.get("current_files", {})) or done.get("layout") != LAYOUT:
        done.pop("current_files", None)  # removed files, or a copy by business date: all again
    closed = closed_before(pruned_through(DuckDBSql(con)))
    same = (done.get("current"), done.get("generation"), done.get("closed", "")) == (
        state,
        generation,
        closed,
    )
    if same and "current_files" in done:
        return []
    from_latest = latest.holds_as_of(DuckDBSql(con), current)
    files: Files = {e: dict(p) for e, p in done.get("current_files", {}).items()}
    since = done.get("changes_through")
    changed = (
        latest.changed_parts(DuckDBSql(con), since) if from_latest and since is not None and files else None
    )
    # names new to this state and generation (a reader's listed files are never replaced by other
    # content), the same for the same refresh in any home: a retry after a crash writes the same
    tag = sha256_text(canonical_json([state, generation, since, closed]))[:12]
    written = []
    for entity, (_view, table, macro) in ENTITIES.items():
        held = files.get(entity, {})
        parts = None if changed is None else sorted(_parts(changed[entity], held, closed))
        if parts == []:
            continue
        params: dict[str, object] = {"closed": closed}
        if from_latest:
            source = f"SELECT {columns[entity]} FROM {LATEST[table][0]}"
        else:
            source, params = f"SELECT * FROM {macro}($current)", {**params, "current": current}
        new = _write_parts(con, root / CURRENT / entity, source, parts=parts, tag=tag, params=params)
        kept = (
            {}
            if parts is None
            else {p: f for p, f in held.items() if p not in parts and not _merged(p, closed)}
        )
        files[entity] = {**kept, **new}
        written.append(f"current {entity}: {'every partition' if parts is None else len(parts)}")
    done["previous_files"] = done.get("current_files", {})
    done["current_files"] = files
    done["changes_through"] = generation if from_latest else None
    done["current"], done["generation"], done["closed"], done["layout"] = state, generation, closed, LAYOUT
    return written


def _write_parts(
    con: duckdb.DuckDBPyConnection,
    folder: Path,
    source: str,
    *,
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
    where = "" if parts is None else f"WHERE list_contains($parts, {_PART_COLUMN})"
    query = f"SELECT * FROM (SELECT *, {PART_SQL} AS {_PART_COLUMN} FROM ({source})) {where}"
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


# A row's file: its cohort, or the month of it once the horizon closed that month ($closed: the
# first month still open, '' while nothing is pruned). Both are text ('YYYY-MM-DD', 'YYYY-MM').
PART_SQL = f"""CASE WHEN substr({COHORT}, 1, 7) < $closed THEN substr({COHORT}, 1, 7) ELSE {COHORT} END"""


def closed_before(horizon: str | None) -> str:
    """The first month the retention horizon has not passed whole: every load date of an earlier
    month is at or behind it (``horizon``: the newest pruned load date), so none is applied again
    and its cohorts only lose rows. '' while nothing is pruned."""
    return horizon[:7] if horizon else ""


def _merged(part: str, closed: str) -> bool:
    """Whether ``part`` is a day's cohort whose month is closed (its rows now in the month's file)."""
    return len(part) > 7 and part[:7] < closed


def _parts(cohorts: set[str], held: dict[str, list[str]], closed: str) -> set[str]:
    """The files to write: the changed cohorts' (a day's, or its month's once closed), and each
    month that holds a day's cohort file the horizon closed since."""
    return {c[:7] if _merged(c, closed) else c for c in cohorts} | {p[:7] for p in held if _merged(p, closed)}


def publish_generation(root: Path, done: dict[str, Any]) -> None:
    """Make the files ``done`` lists (and each entity's schema file) the state the views read:
    hard links in a new generation folder, each named with the generation's tag (so no name a
    reader listed in one generation opens a file of another), fsynced, then ``live`` swapped to
    the folder in one rename. A generation already live is left as it is (a retry after a crash
    between the swap and the record). Records the live folder and the one before in ``done``."""
    current = root / CURRENT
    listing = {
        entity: [
            SCHEMA_FILE,
            *sorted(n for names in done.get("current_files", {}).get(entity, {}).values() for n in names),
        ]
        for entity in ENTITIES
    }
    tag = sha256_text(canonical_json(listing))[:12]
    name = f"{GENERATION_PREFIX}{tag}"
    link = current / LIVE
    if live_folder(root) != name:
        folder = current / name
        shutil.rmtree(folder, ignore_errors=True)  # of an attempt a crash cut short before its swap
        for entity, names in listing.items():
            (folder / entity).mkdir(parents=True)
            for file in names:
                _link(current / entity / file, folder / entity / f"{tag}.{file}")
            fsync_folder(folder / entity)
        fsync_folder(folder)
        tmp = current / f".{LIVE}.tmp"
        tmp.unlink(missing_ok=True)
        os.symlink(name, tmp)
        if link.is_dir() and not link.is_symlink():  # a home copied without its symlinks
            shutil.rmtree(link)
        os.replace(tmp, link)
        fsync_folder(current)
    if done.get("live") != name:
        done["previous_live"], done["live"] = done.get("live"), name


def live_folder(root: Path) -> str | None:
    """The generation folder ``live`` points to (None: no symlink yet)."""
    link = root / CURRENT / LIVE
    return os.readlink(link) if link.is_symlink() else None


def _all_present(root: Path, files: Files) -> bool:
    return all(
        (root / CURRENT / entity / name).exists()
        for entity, parts in files.items()
        for names in parts.values()
        for name in names
    )


# a file system without hard links (or across devices): the generation holds copies instead
_NO_HARD_LINKS = {errno.EPERM, errno.EXDEV, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EMLINK}


def _link(source: Path, target: Path) -> None:
    try:
        os.link(source, target)
    except OSError as error:
        if error.errno not in _NO_HARD_LINKS:
            raise
        tmp = target.with_name(f".{target.name}.tmp")
        shutil.copyfile(source, tmp)
        atomic_replace(tmp, target)


def view_sql(entity: str, home_sql: str) -> str:
    """The view of ``entity``'s current state: the files of the generation ``live`` points to
    when the query lists them. A connection held open sees each new generation; a query whose
    listing and reads a swap falls between fails (a listed name is in no other generation).
    ``home_sql``: the home folder as SQL, escaped as the start of a file pattern."""
    return f"SELECT * FROM read_parquet({home_sql} || '/published/{CURRENT}/{LIVE}/{entity}/*.parquet')"


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
    (older refreshes, an attempt a crash cut short), the generation folders other than the live
    one and the one before, and what views before v7 read (the manifest, the single files of
    views before v6)."""
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
    kept = {done.get("live"), done.get("previous_live"), live_folder(root)}
    current = root / CURRENT
    for generation in current.glob(f"{GENERATION_PREFIX}*") if current.exists() else []:
        if generation.name not in kept:
            shutil.rmtree(generation, ignore_errors=True)
    (current / "manifest.parquet").unlink(missing_ok=True)
    for old in ("current_orders.parquet", "current_customers.parquet"):
        (root / old).unlink(missing_ok=True)


def snapshot_digest(con: duckdb.DuckDBPyConnection, day: str) -> str:
    row = con.execute("SELECT content_sha256 FROM snapshots WHERE load_date = ?", [day]).fetchall()
    return str(row[0][0]) if row else ""
