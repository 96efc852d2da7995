"""Preparing a chunk of a delivery's lines for landing: the CPU-bound half of landing, run in a
worker process per core (``workers.py``) or, for a small chunk, in the landing process itself.

Reads no file and touches no warehouse: it takes lines the landing process read (and verified
against the manifest), and writes two Parquet files into a folder that process owns:
``lines.parquet`` (every non-blank line's number and the sha256 of its raw bytes; its text, or
when the grammar certified it, how it was rendered) and ``staged.parquet`` (the staged event of
each certified line, from ``certify.py``), as ``zstd``, durable, with their sha256: landing keeps
them as the evidence itself (``home/segment_files.py``; DuckDB registers them, ``db/segments.py``).
Importing this module is cheap on purpose (no warehouse, no Dagster; DuckDB only in memory): it
is what a worker process imports.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from replay_assets.core.events import ValidationContext
from replay_assets.storage.home.files import LineProblem
from replay_assets.storage.home.segment_files import LINES_FILE_SCHEMA, STAGED_FILE_SCHEMA, Written, write
from replay_assets.storage.landing.certify import certify
from replay_assets.storage.landing.grammar import sha256_hex

LINES_FILE = "lines.parquet"
STAGED_FILE = "staged.parquet"


@dataclass(frozen=True)
class Job:
    """``lines`` numbered from ``first``; ``problems`` (by line number) were rejected while
    reading and are never certified; the outputs go to ``folder``."""

    first: int
    lines: list[str]
    problems: dict[int, LineProblem]
    ctx: ValidationContext
    folder: str


@dataclass(frozen=True)
class Prepared:
    present: int  # non-blank lines (a line rejected while reading counts)
    certified: int
    cpu_seconds: float  # the preparing process's CPU time for this job
    lines: Written
    staged: Written


def job(
    first: int, lines: list[str], problems: dict[int, LineProblem], *, ctx: ValidationContext, folder: str
) -> Job:
    """A job that pickles small: the upcasters stay behind (the grammar certifies version 1 only)."""
    return Job(first, lines, problems, ctx=dataclasses.replace(ctx, upcasters={}), folder=folder)


def prepare(work: Job) -> Prepared:
    cpu = time.process_time()
    frame, staged = frames(work.first, work.lines, work.problems, work.ctx)
    folder = Path(work.folder)
    written_lines = write(frame, folder / LINES_FILE, LINES_FILE_SCHEMA)
    written_staged = write(staged, folder / STAGED_FILE, STAGED_FILE_SCHEMA)
    return Prepared(
        present=frame.height,
        certified=staged.height,
        cpu_seconds=time.process_time() - cpu,
        lines=written_lines,
        staged=written_staged,
    )


def frames(
    first: int, lines: list[str], problems: dict[int, LineProblem], ctx: ValidationContext
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """A chunk's receipts (``LINES_FILE_SCHEMA``: every non-blank line's number and the sha256 of
    its raw bytes; its text, or when the grammar certified it, how it was rendered) and the staged
    events the grammar certified (``STAGED_FILE_SCHEMA``), both by line number. Lines in
    ``problems`` were rejected while reading and are never certified."""
    staged = certify(ctx, lines, skip=[number - first for number in problems])
    frame = pl.DataFrame({"line": lines}, schema={"line": pl.String}).with_row_index("index")
    rendering = pl.repeat(None, frame.height, dtype=pl.Int8, eager=True)
    frame = frame.with_columns(
        (pl.col("index").cast(pl.Int64) + first).alias("line_number"),
        sha256_hex("line").alias("sha256"),
        rendering.scatter(staged["line_index"], staged["rendering"]).alias("rendering"),
    )
    if problems:  # the sha256 of the raw bytes, which the line's evidence text is not
        at = [number - first for number in problems]
        frame = frame.with_columns(frame["sha256"].scatter(at, [p.sha256 for p in problems.values()]))
    # each fact once: a certified line is its staged event rendered again, not a payload
    frame = frame.with_columns(pl.when(pl.col("rendering").is_null()).then(pl.col("line")).alias("line"))
    uncertified = frame.filter(pl.col("rendering").is_null())
    blank = [
        index
        for index, line in zip(uncertified["index"], uncertified["line"], strict=True)
        if not line.strip() and first + index not in problems
    ]
    if blank:
        frame = frame.filter(~pl.col("index").is_in(blank))
    staged = staged.drop("rendering").with_columns((pl.col("line_index") + first).alias("line_index"))
    return frame.select(LINES_FILE_SCHEMA.names()), staged.rename({"line_index": "line_number"})
