"""Landing a verified delivery into the warehouse: raw receipts (immutable), validated staged
events, rejected events and schema-gate violations, in the caller's transaction."""

from __future__ import annotations

import datetime as dt
import json
import tempfile
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb
import polars as pl

from replay_assets.core.errors import ErrorCode, ReplayError, Violation
from replay_assets.core.events import (
    CUSTOMER_IMAGE,
    KEY_FIELDS,
    ORDER_IMAGE,
    SCHEMA_VERSION,
    BatchViolation,
    Event,
    Rejection,
    ValidationContext,
    canonical_json,
    parse_event,
)
from replay_assets.core.manifest import Manifest
from replay_assets.storage.db.warehouse import insert_frame, one
from replay_assets.storage.landing import parallel, validation
from replay_assets.storage.landing.area import DeliveryFile, RawChunk
from replay_assets.storage.landing.files import LineProblem
from replay_assets.storage.landing.source_records import RECORD_LINE_FACTOR, land_records

STAGED_IMAGE = (*ORDER_IMAGE, *(c for c in CUSTOMER_IMAGE if c not in ORDER_IMAGE))
STAGED_SCHEMA = pl.Schema(
    {
        "batch_id": pl.String,
        "source": pl.String,
        "load_date": pl.String,
        "source_file": pl.String,
        "line_number": pl.Int64,
        "event_id": pl.String,
        "source_seq": pl.Int64,
        "entity": pl.String,
        "op": pl.String,
        "key": pl.String,
        "version": pl.Int64,
        "event_time": pl.String,
        "content_sha256": pl.String,
        "image_sha256": pl.String,
        "order_id": pl.String,
        "line_no": pl.Int64,
        "store_id": pl.String,
        "customer_id": pl.String,
        "product_id": pl.String,
        "business_date": pl.String,
        "quantity": pl.Int64,
        "amount_minor": pl.Int64,
        "cost_minor": pl.Int64,
        "status": pl.String,
        "name": pl.String,
        "segment": pl.String,
    }
)


@dataclass(frozen=True)
class Landed:
    batch_id: str
    source_events: int
    rejected: int
    violations: int
    bytes_read: int
    new: bool
    worker_cpu_seconds: float = 0.0  # landing workers' CPU time (the landing process's is measured apart)


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
        if known != manifest.sha256:
            raise ReplayError(
                ErrorCode.BATCH_ID_REUSED, f"batch {manifest.batch_id} was landed before with other content"
            )
        return Landed(manifest.batch_id, 0, rejected=0, violations=0, bytes_read=0, new=False)
    base = {"batch_id": manifest.batch_id, "source": manifest.source, "load_date": manifest.load_date}
    found = _Found()
    if manifest.schema_version != 1 and manifest.schema_version not in ctx.upcasters:
        found.violations.append(
            {
                **base,
                "source_file": None,
                "line_number": None,
                "event_id": None,
                "rule": Violation.UNSUPPORTED_SCHEMA_VERSION.value,
                "detail": "manifest schema_version is not 1 and no upcaster is declared for it",
            }
        )
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
    return Landed(
        manifest.batch_id,
        events,
        rejected=len(found.rejected),
        violations=len(found.violations),
        bytes_read=sum(f.size for f in files),
        new=True,
        worker_cpu_seconds=found.worker_cpu_seconds,
    )


@dataclass
class _Found:
    """What a batch's lines produced besides staged events: rejections, schema-gate violations,
    the events each file had upcast, by delivered ``schema_version``, and the CPU time its lines
    took in the landing workers."""

    rejected: list[dict[str, Any]] = field(default_factory=list)
    violations: list[dict[str, Any]] = field(default_factory=list)
    upcast: Counter[tuple[str, int]] = field(default_factory=Counter)
    worker_cpu_seconds: float = 0.0


def _record_upcasts(
    con: duckdb.DuckDBPyConnection,
    manifest: Manifest,
    upcast: Counter[tuple[str, int]],
    ctx: ValidationContext,
) -> None:
    for (source_file, version), count in sorted(upcast.items()):
        upcaster = ctx.upcasters[version]
        con.execute(
            "INSERT INTO upcast_events (batch_id, load_date, source_file, schema_version, upcaster_sha256, "
            "events, upcaster) VALUES (?, ?, ?, ?, ?, ?, ?)",
            [
                manifest.batch_id,
                manifest.load_date,
                source_file,
                version,
                upcaster.sha256,
                count,
                canonical_json(upcaster.declaration()),
            ],
        )


def _land_file(
    con: duckdb.DuckDBPyConnection,
    where: dict[str, Any],
    f: DeliveryFile,
    ctx: ValidationContext,
    now: dt.datetime,
    found: _Found,
) -> int:
    """Land one file chunk by chunk: while the workers prepare a chunk (``prepare.py``: hashes,
    the grammar's certification, Parquet), this process lands the one before and reads the one
    after. Returns the number of source events (non-blank lines)."""
    events = 0
    with tempfile.TemporaryDirectory(prefix="replay-chunk-") as folder:
        before: tuple[RawChunk, parallel.Started] | None = None
        for number, chunk in enumerate(f.chunks(parallel.CHUNK_LINES, line_bytes=ctx.max_line_bytes)):
            started = parallel.start(chunk, ctx, Path(folder) / str(number))
            if before is not None:
                events += _land_prepared(con, where, *before, ctx=ctx, now=now, found=found)
            before = (chunk, started)
        if before is not None:
            events += _land_prepared(con, where, *before, ctx=ctx, now=now, found=found)
    return events


def _land_prepared(
    con: duckdb.DuckDBPyConnection,
    where: dict[str, Any],
    chunk: RawChunk,
    started: parallel.Started,
    ctx: ValidationContext,
    now: dt.datetime,
    found: _Found,
) -> int:
    """Land a prepared chunk: every line as a raw receipt and the grammar's certified events as
    staged events, set-based from the workers' Parquet files; the lines the grammar left go to
    DuckDB's JSON path (another layout of a valid event) and then, one by one, to
    ``parse_event``, which decides every line neither path certified."""
    prepared = started.results()
    found.worker_cpu_seconds += sum(p.cpu_seconds for p in prepared)
    lines, staged = parallel.files(prepared)
    values = {n: where[n] for n in _WHERE}
    con.execute(
        """INSERT INTO raw_receipts (batch_id, source, load_date, landed_at, source_file,
               line_number, payload_sha256, payload, rendering)
           SELECT $batch_id, $source, $load_date, $now, $source_file, line_number, sha256, line, rendering
           FROM read_parquet($lines)""",
        {**values, "now": now, "lines": lines},
    )
    _insert_staged(con, "read_parquet($staged)", {**values, "staged": staged})
    present = sum(p.present for p in prepared)
    if present > sum(p.certified for p in prepared):
        _land_rest(con, where, lines, problems=chunk[2], ctx=ctx, found=found)
    return present


def _land_rest(
    con: duckdb.DuckDBPyConnection,
    where: dict[str, Any],
    lines: list[str],
    problems: dict[int, LineProblem],
    ctx: ValidationContext,
    found: _Found,
) -> None:
    """The lines of a chunk the grammar did not certify: DuckDB's JSON path certifies what it
    can (never a line rejected while reading), ``parse_event`` decides the rest."""
    rest = """(SELECT line_number, line FROM read_parquet($lines) WHERE rendering IS NULL
                AND starts_with(line, '{') AND strlen(line) <= $max_bytes
                AND NOT list_contains($problems, line_number))"""
    sql, params = validation.certified_sql(ctx, rest)
    values = {n: where[n] for n in _WHERE}
    params |= {**values, "lines": lines, "problems": sorted(problems), "max_bytes": ctx.max_line_bytes}
    done = _insert_staged(con, f"({sql})", params, returning=True)
    rest_lines = con.execute(
        "SELECT line_number, line FROM read_parquet($lines) WHERE rendering IS NULL ORDER BY line_number",
        {"lines": lines},
    ).fetchall()
    slow_staged = []
    for number, line in (row for row in rest_lines if row[0] not in done):
        where_row = {**where, "line_number": number}
        problem = problems.get(number)
        outcome = Rejection(problem.reason, problem.detail) if problem else parse_event(line, ctx)
        if isinstance(outcome, Event):
            slow_staged.append(_staged_row(where_row, outcome))
            if outcome.schema_version != SCHEMA_VERSION:
                found.upcast[where["source_file"], outcome.schema_version] += 1
        elif isinstance(outcome, Rejection):
            found.rejected.append(
                {
                    **where_row,
                    "event_id": outcome.event_id,
                    "reason_code": outcome.reason.value,
                    "detail": outcome.detail,
                }
            )
        else:
            found.violations.append(_violation_row(where_row, outcome))
    if slow_staged:
        frame = pl.DataFrame(slow_staged, schema=STAGED_SCHEMA)
        insert_frame(con, "staged_events", frame.select(list(STAGED_SCHEMA)).cast(STAGED_SCHEMA))


_WHERE = ("batch_id", "source", "load_date", "source_file")  # a file's columns, bound as parameters
_STAGED_COLUMNS = ", ".join(c for c in STAGED_SCHEMA if c not in _WHERE)


def _insert_staged(
    con: duckdb.DuckDBPyConnection, source: str, params: dict[str, object], *, returning: bool = False
) -> set[int]:
    """Insert the staged events of ``source`` (SQL text of our own: a relation of the event
    columns) for the file ``params`` names; with ``returning``, their line numbers."""
    sql = f"""INSERT INTO staged_events ({", ".join(_WHERE)}, {_STAGED_COLUMNS})
        SELECT $batch_id, $source, $load_date, $source_file, {_STAGED_COLUMNS} FROM {source}"""
    if not returning:
        con.execute(sql, params)
        return set()
    return {row[0] for row in con.execute(sql + " RETURNING line_number", params).fetchall()}


def _violation_row(where: dict[str, Any], v: BatchViolation) -> dict[str, Any]:
    return {
        **where,
        "event_id": v.event_id,
        "rule": v.rule.value,
        "detail": f"{v.detail} ({where['source_file']} line {where['line_number']})",
    }


def _staged_row(where: dict[str, Any], e: Event) -> dict[str, Any]:
    row = {
        **where,
        "event_id": e.event_id,
        "source_seq": e.source_seq,
        "entity": e.entity.value,
        "op": e.op.value,
        "key": e.key,
        "version": e.version,
        "event_time": e.event_time,
        "content_sha256": e.content_sha256,
        "image_sha256": e.image_sha256,
    }
    row.update(dict.fromkeys(STAGED_IMAGE))
    key_values = json.loads(e.key)
    row.update(zip(KEY_FIELDS[e.entity], key_values, strict=True))
    if e.image is not None:
        row.update(e.image)
    return row


def _insert_manifest(
    con: duckdb.DuckDBPyConnection,
    manifest: Manifest,
    files: Sequence[DeliveryFile],
    events: int,
    now: dt.datetime,
) -> None:
    con.execute(
        "INSERT INTO manifests ("
        "batch_id, source, load_date, manifest_sha256, ready_at, seq_low, seq_high, source_events, "
        "bytes_read, landed_at"
        ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [
            manifest.batch_id,
            manifest.source,
            manifest.load_date,
            manifest.sha256,
            manifest.ready_at.isoformat(),
            manifest.seq_low,
            manifest.seq_high,
            events,
            sum(f.size for f in files),
            now,
        ],
    )
    sizes = {f.name: f.size for f in files}
    for declared in manifest.files:  # verified at landing: what a pruned load date still proves
        con.execute(
            "INSERT INTO landed_files (batch_id, load_date, source_file, sha256, events, bytes) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            [
                manifest.batch_id,
                manifest.load_date,
                declared.path,
                declared.sha256,
                declared.events,
                sizes.get(declared.path),
            ],
        )
