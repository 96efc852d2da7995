"""Landing one delivery file inside the engine: the function a ``mapInArrow`` task runs (in Sail's
server process, or on a Spark executor), so no line of a delivery passes through the client.

A task takes rows naming delivery files (a path the engine's workers can read, and the file as
its manifest declares it), reads each file once as a stream, opened as a regular file only, and
yields Arrow batches of one wide schema (``OUT``), each row tagged by ``kind``: every non-blank
line's receipt, the staged events the grammar certified (``storage/landing/prepare.py``, the
same rules as the DuckDB adapter's workers), the oracle's decision on every other line
(``rows.decide_rest``: staged events, rejections, violations), and one ``file`` row with what
the engine computed of the manifest's checks (the events counted, and the mismatch when the
sha256 or the count is not the declared one) and the upcasts by version. This module imports no
Spark: it is what the engine's Python imports.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa

from replay_assets.core.events import ValidationContext
from replay_assets.core.manifest import ManifestFile
from replay_assets.storage.home.segment_files import STAGED_FILE_SCHEMA
from replay_assets.storage.landing import prepare, rows
from replay_assets.storage.landing.area import DeliveryFile, DeliveryMismatch

CHUNK_LINES = 1 << 16  # lines certified at a time: bounds the task's memory whatever the file's size

# a file the task reads: where the engine finds it, and its manifest's declaration
IN = pa.schema(
    [
        ("path", pa.string()),
        ("name", pa.string()),
        ("sha256", pa.string()),
        ("events", pa.int64()),
        ("bytes", pa.int64()),
    ]
)

_STAGED = [
    (name, pa.int64() if dtype == pl.Int64 else pa.string())
    for name, dtype in STAGED_FILE_SCHEMA.items()
    if name != "line_number"
]
OUT = pa.schema(
    [
        ("kind", pa.string()),  # receipt, staged, rejected, violation or file
        ("source_file", pa.string()),
        ("line_number", pa.int64()),
        ("payload_sha256", pa.string()),
        ("payload", pa.string()),
        ("rendering", pa.int8()),
        *_STAGED,
        ("reason_code", pa.string()),
        ("rule", pa.string()),
        ("detail", pa.string()),
        ("events", pa.int64()),  # a file's non-blank lines
        ("problem", pa.string()),  # a file's mismatch with its manifest
        ("upcast", pa.string()),  # a file's upcast events, JSON [[version, count], ...]
        ("cpu_seconds", pa.float64()),
    ]
)


def land_files(ctx: ValidationContext, batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """``mapInArrow``'s function over batches of ``IN`` rows: each named file landed in turn."""
    for batch in batches:
        for row in batch.to_pylist():
            declared = ManifestFile(row["name"], row["sha256"], row["events"], row["bytes"])
            yield from land_file(ctx, DeliveryFile(declared, Path(row["path"])))


def land_file(ctx: ValidationContext, f: DeliveryFile) -> Iterator[pa.RecordBatch]:
    """The rows of one file, chunk by chunk, then its ``file`` row. A file that does not match
    its manifest still yields what it read: the ``file`` row names the mismatch, and the caller
    lands nothing of the batch."""
    cpu = time.process_time()
    found = rows.Found()
    where = {"source_file": f.name}
    events, problem = 0, None
    try:
        for first, lines, problems in f.chunks(CHUNK_LINES, line_bytes=ctx.max_line_bytes):
            receipts, staged = prepare.frames(first, lines, problems, ctx)
            events += receipts.height
            yield _batch("receipt", where, receipts.rename({"sha256": "payload_sha256", "line": "payload"}))
            yield _batch("staged", where, staged)
            undecided = receipts.filter(pl.col("rendering").is_null()).select("line_number", "line")
            decided = rows.decide_rest(where, undecided.iter_rows(), problems=problems, ctx=ctx, found=found)
            if decided:
                yield _batch("staged", where, pl.DataFrame(decided, schema=_DECIDED))
    except DeliveryMismatch as mismatch:
        problem = str(mismatch)
    if found.rejected:
        yield _batch("rejected", where, pl.DataFrame(found.rejected).drop("source_file"))
    if found.violations:
        yield _batch("violation", where, pl.DataFrame(found.violations).drop("source_file"))
    upcast = sorted([version, n] for (_, version), n in found.upcast.items())
    figures: dict[str, object] = {"events": events, "problem": problem, "upcast": json.dumps(upcast)}
    figures["cpu_seconds"] = time.process_time() - cpu
    yield _batch("file", where, pl.DataFrame([figures]))


_DECIDED = pl.Schema([("source_file", pl.String), *STAGED_FILE_SCHEMA.items()])


def _batch(kind: str, where: dict[str, Any], frame: pl.DataFrame) -> pa.RecordBatch:
    """``frame``'s rows as a batch of ``OUT``: its columns by name, the others null."""
    columns = {"kind": kind, **where}
    present = [c for c in frame.columns if c in OUT.names and c not in columns]
    table = frame.select(present).with_columns(pl.lit(v).alias(c) for c, v in columns.items())
    missing = [pl.lit(None).alias(name) for name in OUT.names if name not in table.columns]
    arrow = table.with_columns(missing).select(OUT.names).to_arrow()
    return pa.RecordBatch.from_arrays(
        [arrow.column(name).combine_chunks().cast(OUT.field(name).type) for name in OUT.names], schema=OUT
    )
