"""Preparing a chunk of a delivery's lines for landing: the CPU-bound half of landing, run in a
worker process per core (``workers.py``) or, for a small chunk, in the landing process itself.

Reads no file and touches no warehouse: it takes lines the landing process read (and verified
against the manifest), and writes two Parquet files into a folder that process owns:
``lines.parquet`` (every non-blank line's number and the sha256 of its raw bytes; its text, or
when the grammar certified it, how it was rendered) and ``staged.parquet`` (the staged event of
each certified line). Importing this module is cheap on purpose (no DuckDB, no Dagster): it is
what a worker process imports.
"""

from __future__ import annotations

import dataclasses
import hashlib
import time
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from replay_assets.core.events import ValidationContext
from replay_assets.core.line_grammar import INT_COLUMNS, STAGED_COLUMNS, certifier
from replay_assets.storage.landing.files import LineProblem

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
    folder: str
    present: int  # non-blank lines (a line rejected while reading counts)
    certified: int
    cpu_seconds: float  # the preparing process's CPU time for this job


def job(
    first: int, lines: list[str], problems: dict[int, LineProblem], *, ctx: ValidationContext, folder: str
) -> Job:
    """A job that pickles small: the upcasters stay behind (the grammar certifies version 1 only)."""
    return Job(first, lines, problems, ctx=dataclasses.replace(ctx, upcasters={}), folder=folder)


def prepare(work: Job) -> Prepared:
    cpu = time.process_time()
    first, lines, problems = work.first, work.lines, work.problems
    sha = hashlib.sha256
    digests = [sha(s.encode()).hexdigest() for s in lines]
    for number, problem in problems.items():
        digests[number - first] = problem.sha256
    blank = [i for i, s in enumerate(lines) if not s.strip() and first + i not in problems]
    rows = certifier(work.ctx)(lines)
    if problems:
        rows = [r for r in rows if first + r[0] not in problems]  # type: ignore[operator]
    rendering: list[int | None] = [None] * len(lines)
    for row in rows:
        rendering[row[0]] = row[-1]  # type: ignore[call-overload]
    frame = pl.DataFrame(
        {
            "line_number": pl.int_range(first, first + len(lines), dtype=pl.Int64, eager=True),
            "sha256": digests,
            # each fact once: a certified line is its staged event rendered again, not a payload
            "line": [s if r is None else None for s, r in zip(lines, rendering, strict=True)],
            "rendering": rendering,
        },
        schema={"line_number": pl.Int64, "sha256": pl.String, "line": pl.String, "rendering": pl.Int8},
    )
    if blank:
        frame = frame.filter(~pl.col("line_number").is_in([first + i for i in blank]))
    folder = Path(work.folder)
    frame.write_parquet(folder / LINES_FILE, compression="uncompressed", statistics=False)
    empty: list[tuple[object, ...]] = [() for _ in STAGED_COLUMNS]
    columns = list(zip(*rows, strict=True)) if rows else empty
    staged = pl.DataFrame(
        dict(zip(STAGED_COLUMNS[:-1], columns[:-1], strict=True)),
        schema={c: pl.Int64 if c == "line_index" else pl.String for c in STAGED_COLUMNS[:-1]},
    )
    staged = staged.with_columns(
        (pl.col("line_index") + first).alias("line_index"), *(pl.col(c).cast(pl.Int64) for c in INT_COLUMNS)
    ).rename({"line_index": "line_number"})
    staged.write_parquet(folder / STAGED_FILE, compression="uncompressed", statistics=False)
    return Prepared(
        work.folder, present=frame.height, certified=len(rows), cpu_seconds=time.process_time() - cpu
    )
