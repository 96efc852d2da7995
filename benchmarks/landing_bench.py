"""The landing's work per line: on lines of the benchmark's stream, the CPU time of
each part of landing a line, medians of repeated runs, and the wall time those parts alone set
at 10M lines on the machine's cores (the floor the landing step cannot go under in this design).

    uv run python benchmarks/landing_bench.py [--lines 64000] [--repeat 5]

The parts are the production functions, in the order a line meets them: the landing process
reads the file (sha256, split into lines, ``area.DeliveryFile.chunks``) and sends each chunk to a
worker process (pickled over a pipe); the worker (``prepare.py``) matches the grammars
(``certify.matches``), extracts and checks the values and renders the canonical texts in DuckDB
(``certify.extract``), hashes them (``certify.hashed``), hashes every line, and writes the two
Parquet files (``segment_files.write``). ``prepare`` is the worker's whole job, so its row shows what
the parts leave out (frames, scatter, the receipts' columns). CPU time counts every thread of this
process (polars and DuckDB run threads), so it is the work, not the wall time of one call. The
script exits 1 unless every generated line is certified (else the parts would time the lines the
slower tiers decide).
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import pickle
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import polars as pl
import stream

from replay_assets.core.events import ValidationContext
from replay_assets.core.manifest import ManifestFile
from replay_assets.storage.home import segment_files
from replay_assets.storage.landing import certify, grammar, parallel
from replay_assets.storage.landing.area import DeliveryFile
from replay_assets.storage.landing.prepare import LINES_FILE, STAGED_FILE, job, prepare

AT_SCALE = 10_000_000  # the target volume: one load date of 10M events


def cpu_per_line(work: Callable[[], object], lines: int, repeat: int) -> float:
    """Median CPU microseconds a line of ``work`` over ``repeat`` runs (after one warm-up)."""
    work()
    spent = []
    for _ in range(repeat):
        started = time.process_time()
        work()
        spent.append(time.process_time() - started)
    return statistics.median(spent) / lines * 1e6


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--lines", type=int, default=64_000, help="lines of a chunk (landing's: 64,000)")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)

    last = dt.date(2026, 9, 30)
    frame = stream.stream(args.lines, args.seed, last, "2026-10-01T00:00:00Z").head(args.lines)
    lines: list[str] = frame["line"].to_list()
    n = len(lines)
    ctx = ValidationContext(last - dt.timedelta(days=stream.BUSINESS_DAYS), last)
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        sha, size = stream.write_file(folder / "part.jsonl", pl.Series("line", lines))
        delivery = DeliveryFile(ManifestFile("part.jsonl", sha, n, size), folder / "part.jsonl")

        def read() -> None:
            for _ in delivery.chunks(parallel.CHUNK_LINES):  # as landing reads a file
                pass

        matched = grammar.matches(lines)
        events = certify.extract(ctx, matched)
        chunk = job(1, lines, {}, ctx=ctx, folder=scratch)
        out = folder / "out"
        out.mkdir()
        prepared = prepare(job(1, lines, {}, ctx=ctx, folder=str(out)))
        receipts = pl.read_parquet(out / LINES_FILE)
        staged_file = pl.read_parquet(out / STAGED_FILE)
        parts: list[tuple[str, str, Callable[[], object]]] = [
            ("landing process", "read, sha256, split", read),
            ("landing process", "pickle a chunk to a worker", lambda: pickle.loads(pickle.dumps(chunk, 5))),
            ("worker", "grammar match (polars regex)", lambda: grammar.matches(lines)),
            ("worker", "extract, check, texts (DuckDB)", lambda: certify.extract(ctx, matched)),
            ("worker", "content and image sha256", lambda: certify.hashed(events)),
            ("worker", "every line's sha256", lambda: frame.select(certify.sha256_hex("line"))),
            (
                "worker",
                "Parquet: receipts (zstd)",
                lambda: segment_files.write(receipts, folder / "r.parquet", segment_files.LINES_FILE_SCHEMA),
            ),
            (
                "worker",
                "Parquet: staged events (zstd)",
                lambda: segment_files.write(
                    staged_file, folder / "s.parquet", segment_files.STAGED_FILE_SCHEMA
                ),
            ),
        ]
        print(f"{n:,} lines of the benchmark's stream; CPU us a line, median of {args.repeat}")
        print(f"{'process':<16} {'part':<34} {'us/line':>8}")
        measured = {}
        for where, name, work in parts:
            measured[name] = cpu_per_line(work, n, args.repeat)
            print(f"{where:<16} {name:<34} {measured[name]:>8.2f}")
        whole = cpu_per_line(
            lambda: prepare(job(1, lines, {}, ctx=ctx, folder=tempfile.mkdtemp(dir=folder))), n, args.repeat
        )
        print(f"{'worker':<16} {'prepare (the whole job)':<34} {whole:>8.2f}")
        cores = os.cpu_count() or 1
        landing = sum(measured[name] for where, name, _ in parts if where != "worker")
        floor = (landing + whole) * AT_SCALE / 1e6 / cores
        print(
            f"at {AT_SCALE:,} lines on {cores} cores: {floor:.1f} s of landing from these parts alone "
            f"({AT_SCALE / floor:,.0f} lines/s); 250k events/s end to end allows {AT_SCALE / 250_000:.0f} s "
            "for everything"
        )
    if prepared.certified != n:  # else the slow tiers' lines skew the parts
        print(f"the grammar certified {prepared.certified} of {n} lines")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
