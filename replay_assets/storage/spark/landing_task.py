"""Landing one delivery file inside the engine: the function a ``mapInArrow`` task runs (in Sail's
server process, or on a Spark executor), so no line of a delivery passes through the client.

A task takes rows naming delivery files (a path or a URI the engine's workers can read, and the
file as its manifest declares it), reads each file once as a stream (a path opened as a regular
file only; a URI through Arrow's file system for its scheme), and
yields Arrow batches of one wide schema (``OUT``), each row tagged by ``kind``: every non-blank
line's receipt, the oracle's decision on each line (``rows.decide_rest``: staged events,
rejections, violations), and one ``file`` row with what the engine computed of the manifest's
checks (the events counted, and the mismatch when the sha256 or the count is not the declared
one) and the upcasts by version. A line a grammar matches (``storage/landing/grammar.py``) and
the oracle stages keeps how it was written instead of its text, as the DuckDB adapter's receipts
keep it. This module imports no Spark and reaches no DuckDB: it is what the engine's Python
imports.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa

from replay_assets.core.errors import RejectReason
from replay_assets.core.events import ValidationContext
from replay_assets.core.manifest import ManifestFile
from replay_assets.storage.home.files import LineProblem
from replay_assets.storage.home.segment_files import STAGED_FILE_SCHEMA
from replay_assets.storage.landing import grammar, rows
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
        ("kind", pa.string()),  # line, receipt, staged, rejected, violation or file
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


def read_files(ctx: ValidationContext, batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """``mapInArrow``'s function over batches of ``IN`` rows: each named file read in turn."""
    for batch in batches:
        for row in batch.to_pylist():
            declared = ManifestFile(row["name"], row["sha256"], row["events"], row["bytes"])
            where = row["path"]
            uri = where if "://" in where else None
            yield from read_file(ctx, DeliveryFile(declared, Path(where), uri=uri))


def read_file(ctx: ValidationContext, f: DeliveryFile) -> Iterator[pa.RecordBatch]:
    """The ``line`` rows of one file, chunk by chunk (every non-blank line: its number, text and
    the sha256 of its raw bytes; a line rejected while reading with its reason and detail), then
    its ``file`` row. A file that does not match its manifest still yields what it read: the
    ``file`` row names the mismatch, and the caller lands nothing of the batch."""
    cpu = time.process_time()
    where = {"source_file": f.name}
    events, problem = 0, None
    try:
        for first, lines, problems in f.chunks(CHUNK_LINES, line_bytes=ctx.max_line_bytes):
            read = _receipts(first, lines, problems)
            events += read.height
            yield _batch("line", where, read.rename({"sha256": "payload_sha256", "line": "payload"}))
    except DeliveryMismatch as mismatch:
        problem = str(mismatch)
    figures = {"events": events, "problem": problem, "upcast": "[]", "cpu_seconds": time.process_time() - cpu}
    yield _batch("file", where, pl.DataFrame([figures]))


def decide_lines(ctx: ValidationContext, batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """``mapInArrow``'s function over ``line`` rows no faster tier certified: the oracle's
    decision on each (``rows.decide_rest``: staged events, rejections, violations), and per file
    a ``file`` row with the events it upcast by version (and no events: the read counted them)."""
    cpu = time.process_time()
    found = rows.Found()
    for batch in batches:
        by_file: dict[str, list[dict[str, Any]]] = {}
        for row in batch.to_pylist():
            by_file.setdefault(row["source_file"], []).append(row)
        for name, lines in by_file.items():
            problems = {
                r["line_number"]: LineProblem(
                    RejectReason(r["reason_code"]), r["detail"], r["payload_sha256"]
                )
                for r in lines
                if r["reason_code"] is not None
            }
            numbered = ((r["line_number"], r["payload"]) for r in lines)
            where = {"source_file": name}
            decided = rows.decide_rest(where, numbered, problems=problems, ctx=ctx, found=found)
            if decided:
                yield _batch("staged", where, pl.DataFrame(decided, schema=_DECIDED))
    for kind, found_rows in (("rejected", found.rejected), ("violation", found.violations)):
        for name, group in _by_file(found_rows).items():
            yield _batch(kind, {"source_file": name}, pl.DataFrame(group).drop("source_file"))
    upcast: dict[str, list[list[int]]] = {}
    for (name, version), n in sorted(found.upcast.items()):
        upcast.setdefault(name, []).append([version, n])
    for name, counts in upcast.items():
        figures = {"events": 0, "upcast": json.dumps(counts), "cpu_seconds": time.process_time() - cpu}
        yield _batch("file", {"source_file": name}, pl.DataFrame([figures]))


def _by_file(found: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    groups: dict[str, list[dict[str, Any]]] = {}
    for row in found:
        groups.setdefault(row["source_file"], []).append(row)
    return groups


_DECIDED = pl.Schema([("source_file", pl.String), *STAGED_FILE_SCHEMA.items()])


def _receipts(first: int, lines: list[str], problems: dict[int, LineProblem]) -> pl.DataFrame:
    """Every non-blank line's number, text and the sha256 of its raw bytes (a line rejected while
    reading counts, with the sha256 of its bytes, which its evidence text is not)."""
    frame = pl.DataFrame({"line": lines}, schema={"line": pl.String}).with_row_index("index")
    frame = frame.with_columns(
        (pl.col("index").cast(pl.Int64) + first).alias("line_number"),
        grammar.sha256_hex("line").alias("sha256"),
    )
    if problems:
        at = [number - first for number in problems]
        frame = frame.with_columns(frame["sha256"].scatter(at, [p.sha256 for p in problems.values()]))
    if problems:
        at = [number - first for number in problems]
        reasons = pl.repeat(None, frame.height, dtype=pl.String, eager=True)
        frame = frame.with_columns(
            reasons.scatter(at, [p.reason.value for p in problems.values()]).alias("reason_code"),
            reasons.scatter(at, [p.detail for p in problems.values()]).alias("detail"),
        )
    blank = [i for i, line in enumerate(lines) if not line.strip() and first + i not in problems]
    if blank:
        frame = frame.filter(~pl.col("index").is_in(blank))
    return frame.drop("index")


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
