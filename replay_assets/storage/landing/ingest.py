"""Landing a verified delivery into the warehouse: raw receipts (immutable), validated staged
events, rejected events and schema-gate violations, in the caller's transaction."""

from __future__ import annotations

import datetime as dt
import tempfile
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import wait as futures_wait
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import duckdb
import polars as pl

from replay_assets.core.events import (
    ValidationContext,
)
from replay_assets.core.manifest import Manifest
from replay_assets.storage.db import segments
from replay_assets.storage.db.warehouse import insert_frame, one
from replay_assets.storage.home.files import LineProblem
from replay_assets.storage.home.paths import glob_literal
from replay_assets.storage.home.segment_files import STAGED_SCHEMA, Written
from replay_assets.storage.landing import parallel, prefetch, rows, validation, workers
from replay_assets.storage.landing.area import DeliveryFile, RawChunk
from replay_assets.storage.landing.rows import Landed as Landed
from replay_assets.storage.landing.source_records import (
    RECORD_LINE_FACTOR,
    SOURCE_RECORDS_SCHEMA,
    record_rows,
)


def landed_sha(con: duckdb.DuckDBPyConnection, batch_id: str) -> str | None:
    row = one(con, "SELECT manifest_sha256 FROM manifests WHERE batch_id = ?", [batch_id])
    return str(row[0]) if row else None


def land_batch(
    con: duckdb.DuckDBPyConnection,
    manifest: Manifest,
    files: Sequence[DeliveryFile],
    ctx: ValidationContext,
    now: dt.datetime,
    records: DeliveryFile | None = None,
) -> Landed:
    """Idempotent: the same manifest again is a no-op; the same batch_id with other content
    fails closed with REPLAY_BATCH_ID_REUSED and lands nothing."""
    known = landed_sha(con, manifest.batch_id)
    if known is not None:
        return rows.landed_again(manifest, known)
    base = {"batch_id": manifest.batch_id, "source": manifest.source, "load_date": manifest.load_date}
    found = rows.Found(violations=rows.schema_gate(manifest, ctx))
    events = 0
    for f in files:
        events += _land_file(con, {**base, "source_file": f.name}, f, ctx=ctx, now=now, found=found)
    _insert_manifest(con, manifest, files=files, events=events, now=now)
    if records is not None:
        land_records(con, manifest, records, line_bytes=RECORD_LINE_FACTOR * ctx.max_line_bytes)
    if found.rejected:
        insert_frame(con, "rejected_events", pl.DataFrame(found.rejected).drop("source"))
    if found.violations:
        frame = pl.DataFrame(found.violations, infer_schema_length=None).drop("source")
        insert_frame(con, "batch_violations", frame.with_columns(pl.lit(now).alias("detected_at")))
    _record_upcasts(con, manifest, found.upcast, ctx)
    return found.landed(manifest, events, files)


def _record_upcasts(
    con: duckdb.DuckDBPyConnection,
    manifest: Manifest,
    upcast: Counter[tuple[str, int]],
    ctx: ValidationContext,
) -> None:
    for row in rows.upcast_rows(manifest, upcast, ctx):
        con.execute(
            f"INSERT INTO upcast_events ({', '.join(row)}) VALUES ({', '.join('?' for _ in row)})",
            list(row.values()),
        )


def _land_file(
    con: duckdb.DuckDBPyConnection,
    where: dict[str, Any],
    f: DeliveryFile,
    ctx: ValidationContext,
    now: dt.datetime,
    found: rows.Found,
) -> int:
    """Land one file chunk by chunk: while the workers prepare a chunk (``prepare.py``: hashes,
    the grammar's certification, Parquet), this thread reads the one after, and a thread of its
    own lands what was prepared before, ``LAND_LINES`` at a time. Returns the
    number of source events (non-blank lines). A file ``prefetch.py`` prepared ahead under the
    same context lands from its prepared chunks."""
    ahead = prefetch.take(f, ctx)
    if ahead is not None:
        ready = [_ready(*c) for c in ahead]
        return _land_ready(con, where, ready, ctx=ctx, now=now, found=found)
    land = partial(_land_ready, con, where, ctx=ctx, now=now, found=found)
    scratch = segments.incoming(con)
    with tempfile.TemporaryDirectory(prefix="replay-chunk-", dir=scratch) as folder, _Lander() as lander:
        before: tuple[RawChunk, parallel.Started] | None = None
        waiting: list[_Ready] = []
        try:
            for number, chunk in enumerate(f.chunks(parallel.CHUNK_LINES, line_bytes=ctx.max_line_bytes)):
                started = parallel.start(chunk, ctx, Path(folder) / str(number))
                if before is not None:
                    waiting.append(_ready(*before))
                    if sum(r.present for r in waiting) >= LAND_LINES:
                        lander.submit(partial(land, waiting))
                        waiting = []
                before = (chunk, started)
            if before is not None:
                waiting.append(_ready(*before))
            lander.submit(partial(land, waiting))
            return lander.wait()
        except BaseException:
            lander.drain()
            # a chunk may still be with the workers (the file is verified only once read whole):
            # its results must not reach the next caller as theirs
            workers.pool().close()
            raise


# Lines handed to the landing thread at a time (but a file's last ones), which keeps their files
# and decides the lines the grammar left (``_land_ready``) while this thread reads on.
LAND_LINES = 4 * parallel.CHUNK_LINES


@dataclass(frozen=True)
class _Ready:
    """A chunk the workers prepared, to land: its Parquet files and what reading found."""

    problems: dict[int, LineProblem]
    lines: list[Written]
    staged: list[Written]
    cpu_seconds: float

    @property
    def present(self) -> int:
        """Non-blank lines: the rows of the lines files."""
        return sum(f.rows for f in self.lines)

    @property
    def certified(self) -> int:
        """Lines the grammar certified: the rows of the staged files."""
        return sum(f.rows for f in self.staged)


def _ready(chunk: RawChunk, started: parallel.Started) -> _Ready:
    prepared = started.results()
    lines, staged = parallel.files(prepared)
    return _Ready(chunk[2], lines, staged, cpu_seconds=sum(p.cpu_seconds for p in prepared))


def _land_ready(
    con: duckdb.DuckDBPyConnection,
    where: dict[str, Any],
    ready: list[_Ready],
    *,
    ctx: ValidationContext,
    now: dt.datetime,
    found: rows.Found,
) -> int:
    """Land prepared chunks: the lines the grammar left go to DuckDB's JSON path (another layout
    of a valid event) and then, one by one, to ``parse_event``, which decides every line neither
    path certified, into ``staged_rows``; then the workers' files (every line's receipt, the
    grammar's certified events) are kept as they are (``segments.py``). Returns the chunks'
    events."""
    found.worker_cpu_seconds += sum(r.cpu_seconds for r in ready)
    for r in ready:
        if r.present > r.certified:
            names = [f.path for f in r.lines]
            _land_rest(con, where, names, problems=r.problems, ctx=ctx, found=found)
    values = {**{n: where[n] for n in _WHERE}, "landed_at": now}
    segments.keep(con, segments.BY_VIEW["raw_receipts"], values, (f for r in ready for f in r.lines))
    segments.keep(con, segments.BY_VIEW["staged_events"], values, (f for r in ready for f in r.staged))
    return sum(r.present for r in ready)


class _Lander:
    """Lands on a thread of its own, one call at a time, in order: the connection and ``found``
    are that thread's while a call is in flight, and the caller's again once :meth:`wait`
    returned (DuckDB's statements release the GIL, so reading the file goes on meanwhile)."""

    def __init__(self) -> None:
        self.pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="replay-land")
        self.pending: Future[int] | None = None
        self.events = 0

    def submit(self, land: Callable[[], int]) -> None:
        self.wait()
        self.pending = self.pool.submit(land)

    def wait(self) -> int:
        """The events landed so far; raises what the call in flight raised."""
        pending, self.pending = self.pending, None
        if pending is not None:
            self.events += pending.result()
        return self.events

    def drain(self) -> None:
        """Let the call in flight end, whatever it raises (the caller is failing already)."""
        if self.pending is not None:
            futures_wait([self.pending])
            self.pending = None

    def __enter__(self) -> _Lander:
        return self

    def __exit__(self, *failure: object) -> None:
        self.drain()
        self.pool.shutdown()


def _land_rest(
    con: duckdb.DuckDBPyConnection,
    where: dict[str, Any],
    lines: list[str],
    problems: dict[int, LineProblem],
    ctx: ValidationContext,
    found: rows.Found,
) -> None:
    """The lines of a chunk the grammar did not certify: DuckDB's JSON path certifies what it
    can (never a line rejected while reading), ``parse_event`` decides the rest."""
    rest = """(SELECT line_number, line FROM read_parquet($lines) WHERE rendering IS NULL
                AND starts_with(line, '{') AND strlen(line) <= $max_bytes
                AND NOT list_contains($problems, line_number))"""
    sql, params = validation.certified_sql(ctx, rest)
    values = {n: where[n] for n in _WHERE}
    lines = [glob_literal(name) for name in lines]  # read_parquet takes each name as a pattern
    params |= {**values, "lines": lines, "problems": sorted(problems), "max_bytes": ctx.max_line_bytes}
    done = _insert_staged(con, f"({sql})", params, returning=True)
    rest_lines = con.execute(
        "SELECT line_number, line FROM read_parquet($lines) WHERE rendering IS NULL ORDER BY line_number",
        {"lines": lines},
    ).fetchall()
    undecided = ((int(number), str(line)) for number, line in rest_lines if number not in done)
    slow_staged = rows.decide_rest(where, undecided, problems=problems, ctx=ctx, found=found)
    if slow_staged:
        frame = pl.DataFrame(slow_staged, schema=STAGED_SCHEMA)
        insert_frame(con, "staged_rows", frame.select(list(STAGED_SCHEMA)).cast(STAGED_SCHEMA))


_WHERE = ("batch_id", "source", "load_date", "source_file")  # a file's columns, bound as parameters
_STAGED_COLUMNS = ", ".join(c for c in STAGED_SCHEMA if c not in _WHERE)


def _insert_staged(
    con: duckdb.DuckDBPyConnection, source: str, params: dict[str, object], *, returning: bool = False
) -> set[int]:
    """Insert the staged events of ``source`` (SQL text of our own: a relation of the event
    columns) for the file ``params`` names; with ``returning``, their line numbers."""
    sql = f"""INSERT INTO staged_rows ({", ".join(_WHERE)}, {_STAGED_COLUMNS})
        SELECT $batch_id, $source, $load_date, $source_file, {_STAGED_COLUMNS} FROM {source}"""
    if not returning:
        con.execute(sql, params)
        return set()
    return {row[0] for row in con.execute(sql + " RETURNING line_number", params).fetchall()}


def _insert_manifest(
    con: duckdb.DuckDBPyConnection,
    manifest: Manifest,
    files: Sequence[DeliveryFile],
    events: int,
    now: dt.datetime,
) -> None:
    row = rows.manifest_row(manifest, files, events, now)
    con.execute(
        f"INSERT INTO manifests ({', '.join(row)}) VALUES ({', '.join('?' for _ in row)})", list(row.values())
    )
    for declared in rows.landed_file_rows(manifest, files):
        con.execute(
            f"INSERT INTO landed_files ({', '.join(declared)}) VALUES ({', '.join('?' for _ in declared)})",
            list(declared.values()),
        )


def land_records(
    con: duckdb.DuckDBPyConnection, manifest: Manifest, records: DeliveryFile, line_bytes: int
) -> None:
    for chunk in record_rows(manifest, records, line_bytes):
        insert_frame(con, "source_records", pl.DataFrame(chunk, schema=SOURCE_RECORDS_SCHEMA))
