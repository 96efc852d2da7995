"""Landing a verified delivery on Delta: the Spark unit's landing port.

The same work as the DuckDB adapter (``storage/landing/ingest.py``) up to the warehouse: each
file read once as a stream and verified against its manifest, its chunks prepared in the landing
workers (hashes, the grammar's certification), every line no fast path certified decided by
``parse_event``, and the rows of ``storage/landing/rows.py``. The DuckDB adapter has one more
tier between the grammar and the oracle (DuckDB's JSON path, proven equal to the oracle); this
adapter sends those lines to the oracle, so the rows are the same. The batch's rows reach Delta
as DataFrames (Arrow), one commit per table, inside the caller's unit: a delivery that turns out
not to match its manifest raises before the unit fences, and nothing of it is ever read.
"""

from __future__ import annotations

import datetime as dt
import tempfile
from collections.abc import Sequence
from pathlib import Path

import polars as pl
from pyspark.sql import functions as F

from replay_assets.core.events import ValidationContext
from replay_assets.core.manifest import Manifest
from replay_assets.core.receipts import LandedCounts
from replay_assets.storage.db import segments
from replay_assets.storage.db.paths import read_parquet_files
from replay_assets.storage.landing import counts, parallel, rows
from replay_assets.storage.landing.area import DeliveryFile, RawChunk
from replay_assets.storage.landing.rows import Landed
from replay_assets.storage.landing.source_records import (
    RECORD_LINE_FACTOR,
    SOURCE_RECORDS_SCHEMA,
    record_rows,
)
from replay_assets.storage.spark.dialect import render
from replay_assets.storage.spark.unit import UnitBase

_TABLES = ("raw_receipts", "staged_events", "rejected_events", "batch_violations", "source_records")


class LandingOps(UnitBase):
    def land_batch(
        self,
        manifest: Manifest,
        *,
        files: Sequence[DeliveryFile],
        ctx: ValidationContext,
        now: dt.datetime,
        records: DeliveryFile | None = None,
    ) -> Landed:
        """Idempotent: the same manifest again is a no-op; the same batch_id with other content
        fails closed with REPLAY_BATCH_ID_REUSED and lands nothing."""
        landed = self.frame("manifests").where(F.col("batch_id") == F.lit(manifest.batch_id))
        known = self.rows(landed.select("manifest_sha256"))
        if known:
            return rows.landed_again(manifest, known[0]["manifest_sha256"])
        out: dict[str, list[pl.DataFrame]] = {table: [] for table in _TABLES}
        found = rows.Found(violations=rows.schema_gate(manifest, ctx))
        events = 0
        batch = {"batch_id": manifest.batch_id, "source": manifest.source, "load_date": manifest.load_date}
        for f in files:
            events += _land_file({**batch, "source_file": f.name}, f, ctx=ctx, now=now, found=found, out=out)
        if records is not None:
            line_bytes = RECORD_LINE_FACTOR * ctx.max_line_bytes
            for chunk in record_rows(manifest, records, line_bytes):
                out["source_records"].append(pl.DataFrame(chunk, schema=SOURCE_RECORDS_SCHEMA))
        out["rejected_events"].append(pl.DataFrame(found.rejected))
        violations = pl.DataFrame(found.violations, infer_schema_length=None)
        out["batch_violations"].append(violations.with_columns(pl.lit(now).alias("detected_at")))
        for table, frames in out.items():
            self.append_frames(table, frames)
        self.append("manifests", [rows.manifest_row(manifest, files, events, now)])
        self.append("landed_files", rows.landed_file_rows(manifest, files))
        upcasts = rows.upcast_rows(manifest, found.upcast, ctx)
        if upcasts:
            self.append("upcast_events", upcasts)
        return found.landed(manifest, events, files)

    def landed_counts(self, load_date: str) -> LandedCounts:
        """The DuckDB adapter's statement (``storage/landing/counts.py``) over this unit's Delta
        tables; only the counts come back."""
        params = counts.parameters(load_date)
        found = self.rows(self.sql(render(counts.LANDED_COUNTS_SQL, params), **params))
        pruned = self.frame("pruned_load_dates").where(F.col("load_date") == F.lit(load_date))
        return counts.counts_of(load_date, found, pruned=bool(pruned.limit(1).collect()))


def _land_file(
    where: dict[str, str],
    f: DeliveryFile,
    ctx: ValidationContext,
    now: dt.datetime,
    found: rows.Found,
    out: dict[str, list[pl.DataFrame]],
) -> int:
    """Every chunk of one file prepared by the workers, then read back as frames. Returns the
    number of source events (non-blank lines)."""
    events = 0
    with tempfile.TemporaryDirectory(prefix="replay-chunk-") as folder:
        for number, chunk in enumerate(f.chunks(parallel.CHUNK_LINES, line_bytes=ctx.max_line_bytes)):
            started = parallel.start(chunk, ctx, Path(folder) / str(number))
            events += _prepared(where, chunk, started, ctx=ctx, now=now, found=found, out=out)
    return events


def _prepared(
    where: dict[str, str],
    chunk: RawChunk,
    started: parallel.Started,
    ctx: ValidationContext,
    now: dt.datetime,
    found: rows.Found,
    out: dict[str, list[pl.DataFrame]],
) -> int:
    prepared = started.results()
    found.worker_cpu_seconds += sum(p.cpu_seconds for p in prepared)
    line_files, staged_files = parallel.files(prepared)
    lines = read_parquet_files([f.path for f in line_files])
    file_columns = [pl.lit(value).alias(name) for name, value in where.items()]
    receipts = [pl.lit(now).alias("landed_at"), pl.col("sha256").alias("payload_sha256")]
    receipts.append(pl.col("line").alias("payload"))
    out["raw_receipts"].append(lines.with_columns([*file_columns, *receipts]))
    out["staged_events"].append(read_parquet_files([f.path for f in staged_files]).with_columns(file_columns))
    undecided = lines.filter(pl.col("rendering").is_null()).select("line_number", "line").sort("line_number")
    decided = rows.decide_rest(where, undecided.iter_rows(), problems=chunk[2], ctx=ctx, found=found)
    if decided:
        out["staged_events"].append(pl.DataFrame(decided, schema=segments.STAGED_SCHEMA))
    return sum(p.present for p in prepared)
