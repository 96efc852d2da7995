"""The landing's rows in the workers' Parquet files (schema v13; benchmarks/README, thirteenth
and fourteenth rounds).

The workers write each prepared chunk's staged events and raw receipts as ``zstd`` Parquet
(``prepare.py``). Landing does not copy those rows into DuckDB: it moves each file under
``$HOME/segments/<kind>/<load_date>/<uuid>.parquet`` and registers it in ``landing_segments``
(its batch, file, rows, bytes and sha256) in the landing's own transaction, after the file's
bytes and its folder's entry are on disk. The views ``staged_events`` and ``raw_receipts`` read
the tables' rows (the lines the grammar left, decided by DuckDB's JSON path or ``parse_event``)
and every registered file's rows, joined to its register row, which gives each file's constant
columns. A file no register row names is never read as evidence: a landing rolled back or killed
after its moves, a relanded batch's or a pruned date's files. The next writer to open the
warehouse removes such files (:func:`sweep`).

Every connection of ours names its home (``SET VARIABLE replay_assets_home``, :func:`bind`); a
plain DuckDB session on ``warehouse.duckdb`` needs nothing: the views fall back to the database
file's own folder (``VIEW_HOME``). A home keeps working when it is moved or restored elsewhere.
A connection without a home (an in-memory warehouse) gets an empty one of this process. Each
kind's folder holds a zero-row ``_schema.parquet``, because DuckDB refuses a glob that matches
no file.
"""

from __future__ import annotations

import atexit
import errno
import hashlib
import os
import shutil
import tempfile
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import duckdb
import polars as pl

from replay_assets.storage.home.files import atomic_replace, fsync_folder
from replay_assets.storage.home.paths import glob_literal, glob_literal_sql
from replay_assets.storage.home.segment_files import (
    FILE_COLUMNS,
    LINES_FILE_SCHEMA,
    STAGED_FILE_SCHEMA,
    STAGED_SCHEMA,
    Written,
    write,
)

FOLDER = "segments"
INCOMING = ".incoming"  # landing's scratch chunks: on the home's file system, so a move is a rename
SCHEMA_FILE = "_schema.parquet"
HOME_VARIABLE = "replay_assets_home"  # the published copy's views read the same (``published_copy.py``)
# The home a view reads the files of: the connection's variable, else the folder of the database
# file itself, from DuckDB's documented default ``temp_directory`` (the file's path plus ``.tmp``),
# so a plain DuckDB session on ``warehouse.duckdb`` reads the views as they are. Attached under
# another name, or with ``temp_directory`` set, the session names the home or the query fails.
VIEW_HOME = (
    f"coalesce(getvariable('{HOME_VARIABLE}'), "
    "CASE WHEN ends_with(current_setting('temp_directory'), '/warehouse.duckdb.tmp') "
    "THEN parse_dirpath(current_setting('temp_directory')) "
    "ELSE error('the landing views read the Parquet files of the folder of warehouse.duckdb: open it "
    f"as the database, or SET VARIABLE {HOME_VARIABLE} = ''<home folder>'' first') END)"
)
MISSING = (
    "a registered segment file is missing (restore the segments folder of the home with its warehouse): "
)


@dataclass(frozen=True)
class Kind:
    """One table of the landing: the view readers query, the table of its rows, the folder of its
    files and how a view column is read from a file (``None``: from the register row)."""

    view: str
    table: str
    folder: str
    schema: pl.Schema
    columns: tuple[tuple[str, str | None], ...]

    @property
    def names(self) -> str:
        """The view's columns, in order, as SQL."""
        return ", ".join(name for name, _ in self.columns)


_RECEIPT_COLUMNS = (
    ("batch_id", None),
    ("source", None),
    ("load_date", None),
    ("landed_at", None),
    ("source_file", None),
    ("line_number", "line_number"),
    ("payload_sha256", "sha256"),
    ("payload", "line"),
    ("rendering", "rendering"),
)
KINDS = (
    Kind(
        view="staged_events",
        table="staged_rows",
        folder="staged",
        schema=STAGED_FILE_SCHEMA,
        columns=tuple((c, None if c in FILE_COLUMNS else c) for c in STAGED_SCHEMA),
    ),
    Kind(
        view="raw_receipts",
        table="receipt_rows",
        folder="receipts",
        schema=LINES_FILE_SCHEMA,
        columns=_RECEIPT_COLUMNS,
    ),
)
BY_VIEW = {k.view: k for k in KINDS}

REGISTER = """CREATE TABLE landing_segments (
    path VARCHAR NOT NULL, kind VARCHAR NOT NULL, batch_id VARCHAR NOT NULL, source VARCHAR NOT NULL,
    load_date VARCHAR NOT NULL, source_file VARCHAR NOT NULL, landed_at TIMESTAMPTZ NOT NULL,
    rows BIGINT NOT NULL, bytes BIGINT NOT NULL, sha256 VARCHAR NOT NULL)"""


def view_sql(kind: Kind) -> str:
    """The view: the table's rows, then every registered file's (``path`` is relative to
    ``$HOME/segments``). A registered file that is gone fails the query with its path rather
    than leave its rows out; a file no register row names is not read."""
    files = ", ".join(
        f"g.{name}" if source is None else f"f.{source} AS {name}" for name, source in kind.columns
    )
    home = f"({VIEW_HOME})"
    return f"""CREATE OR REPLACE VIEW {kind.view} AS
SELECT {kind.names} FROM {kind.table}
UNION ALL
SELECT {files}
FROM landing_segments g
LEFT JOIN read_parquet({glob_literal_sql(home)} || '/{FOLDER}/{kind.folder}/**/*.parquet', filename = true) f
    ON f.filename = {home} || '/{FOLDER}/' || g.path
WHERE g.kind = '{kind.folder}' AND CASE WHEN f.filename IS NULL
    THEN error(concat('{MISSING}', g.path)) ELSE true END"""


def of_date(con: duckdb.DuckDBPyConnection, view: str, params: dict[str, object]) -> str:
    """SQL of a relation: the view's rows of the load date ``$day``'s batches ``$batches``, the
    date's registered files read by name rather than the whole folder through the glob (a
    missing one fails the statement). Each file's constant columns come from lists indexed by
    the reader's ``file_index`` (its position in the list of files): a join on the file name
    costs more than the read itself. Adds the parameters it needs to ``params``."""
    kind = BY_VIEW[view]
    home = home_of(con) / FOLDER
    constant = [name for name, source in kind.columns if source is None]
    found = con.execute(
        f"SELECT path, {', '.join(constant)} FROM landing_segments "
        "WHERE kind = $kind AND load_date = $day AND list_contains($batches, batch_id) ORDER BY path",
        {"kind": kind.folder, "day": params["day"], "batches": params["batches"]},
    ).fetchall()
    # the schema file first (``read_parquet`` refuses an empty list): it has no rows
    paths = [home / kind.folder / SCHEMA_FILE, *(home / r[0] for r in found)]
    params["segment_files"] = [glob_literal(path) for path in paths]
    for i, name in enumerate(constant, start=1):
        params[f"segment_{name}"] = [None, *(r[i] for r in found)]
    files = ", ".join(
        f"($segment_{name})[CAST(f.file_index AS BIGINT) + 1] AS {name}"
        if source is None
        else f"f.{source} AS {name}"
        for name, source in kind.columns
    )
    return f"""(SELECT {kind.names} FROM {kind.table}
        WHERE load_date = $day AND list_contains($batches, batch_id)
    UNION ALL
    SELECT {files} FROM read_parquet($segment_files) f)"""


def bind(con: duckdb.DuckDBPyConnection, home: Path | None, *, create: bool) -> Path:
    """Name the connection's home (an empty one of this process when ``home`` is None); with
    ``create``, make its folders and schema files when missing. Returns the home."""
    where = _empty_home() if home is None else Path(home).resolve()
    if create and home is not None:
        _schema_files(where)
    con.execute(f"SET VARIABLE {HOME_VARIABLE} = ?", [str(where)])
    return where


def home_of(con: duckdb.DuckDBPyConnection) -> Path:
    found = con.execute(f"SELECT getvariable('{HOME_VARIABLE}')").fetchall()
    if not found or found[0][0] is None:
        raise RuntimeError("the connection names no home (segments.bind)")
    return Path(str(found[0][0]))


def incoming(con: duckdb.DuckDBPyConnection) -> Path:
    """Where landing prepares a file's chunks: in the home, so that keeping a file is a rename."""
    folder = home_of(con) / FOLDER / INCOMING
    folder.mkdir(parents=True, exist_ok=True)
    return folder


_EMPTY: list[Path] = []


def _empty_home() -> Path:
    if not _EMPTY:
        folder = Path(tempfile.mkdtemp(prefix="replay-no-home-"))
        atexit.register(shutil.rmtree, folder, ignore_errors=True)
        _schema_files(folder)
        _EMPTY.append(folder)
    return _EMPTY[0]


def _schema_files(home: Path) -> None:
    for kind in KINDS:
        target = home / FOLDER / kind.folder / SCHEMA_FILE
        if target.exists():
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        part = target.with_name(f"{SCHEMA_FILE}.{uuid.uuid4().hex}.part")
        write(pl.DataFrame(schema=kind.schema), part, kind.schema)
        atomic_replace(part, target)


def keep(
    con: duckdb.DuckDBPyConnection,
    kind: Kind,
    where: dict[str, object],
    files: Iterable[Written],
) -> None:
    """Move the prepared ``files`` of one delivered file into the home and register them, in the
    caller's transaction. ``where`` holds the file's constant columns (and ``landed_at``)."""
    kept = [f for f in files if f.rows]
    if not kept:
        return
    folder = home_of(con) / FOLDER / kind.folder / str(where["load_date"])
    if not folder.is_dir():
        folder.mkdir(parents=True, exist_ok=True)
        fsync_folder(folder.parent)
    rows = []
    for f in kept:
        name = f"{uuid.uuid4().hex}.parquet"
        _move(Path(f.path), folder / name)
        rows.append(
            [f"{kind.folder}/{where['load_date']}/{name}", kind.folder, *(where[c] for c in FILE_COLUMNS)]
        )
        rows[-1] += [where["landed_at"], f.rows, f.bytes, f.sha256]
    fsync_folder(folder)
    con.executemany(
        "INSERT INTO landing_segments (path, kind, batch_id, source, load_date, source_file, landed_at, "
        "rows, bytes, sha256) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        rows,
    )


def _move(source: Path, target: Path) -> None:
    """A rename; a copy (fsynced, then renamed into place) where the file systems differ."""
    try:
        os.rename(source, target)
    except OSError as error:
        if error.errno != errno.EXDEV:
            raise
        part = target.with_name(target.name + ".part")
        shutil.copyfile(source, part)
        atomic_replace(part, target)


def delete(con: duckdb.DuckDBPyConnection, view: str, where: str, params: dict[str, object]) -> int:
    """Delete a landing view's rows matching ``where`` (SQL of our own over the file columns):
    the table's rows and the register rows of its files (the files go when the next writer opens
    the warehouse: :func:`sweep`). Returns the rows removed."""
    kind = BY_VIEW[view]
    found = con.execute(f"DELETE FROM {kind.table} WHERE {where} RETURNING 1", params).fetchall()
    files = con.execute(
        f"DELETE FROM landing_segments WHERE kind = '{kind.folder}' AND {where} RETURNING rows", params
    ).fetchall()
    return len(found) + sum(int(r[0]) for r in files)


def sweep(con: duckdb.DuckDBPyConnection) -> int:
    """Remove the home's segment files no register row names, and landing's scratch chunks. Only
    a writer under the lock calls it, with no landing in flight (its moved files are not
    registered until it commits). Returns the files removed."""
    home = home_of(con) / FOLDER
    registered = {str(r[0]) for r in con.execute("SELECT path FROM landing_segments").fetchall()}
    removed = 0
    for kind in KINDS:
        base = home / kind.folder
        if not base.is_dir():
            continue
        for day in base.iterdir():
            if not day.is_dir():
                continue
            for f in day.iterdir():
                if f"{kind.folder}/{day.name}/{f.name}" not in registered:
                    f.unlink(missing_ok=True)
                    removed += 1
            if not any(day.iterdir()):
                day.rmdir()
    shutil.rmtree(home / INCOMING, ignore_errors=True)
    return removed


def check(con: duckdb.DuckDBPyConnection) -> tuple[int, list[dict[str, object]]]:
    """The registered files, and each whose bytes are not what was registered: gone, another
    size or another sha256 (``replay-assets reconcile``). Reads each file whole, one at a time."""
    home = home_of(con) / FOLDER
    found: list[dict[str, object]] = []
    registered = con.execute("SELECT path, bytes, sha256 FROM landing_segments ORDER BY path").fetchall()
    for path, size, digest in registered:
        target = home / str(path)
        if not target.is_file():
            found.append({"path": path, "problem": "missing"})
            continue
        data = target.read_bytes()
        if len(data) != size:
            found.append({"path": path, "problem": f"{len(data)} bytes, registered {size}"})
        elif hashlib.sha256(data).hexdigest() != digest:
            found.append({"path": path, "problem": "sha256 differs from the registered one"})
    return len(registered), found
