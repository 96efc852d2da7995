"""The Spark landing's SQL tier alone (``rules/canonical_lines.py``) on a standalone Sail server:
the server's CPU time a line to certify the generated stream's lines, read from Parquet and
written to Parquet, beside a plain copy of the same lines (the floor of reading and writing).

    uv run python benchmarks/tier_bench.py --lines 200000

The server's CPU time is read from ``/proc`` around each statement; every line of the generated
stream is canonical, so the rule must certify them all (exits 1 otherwise).
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import sys
import tempfile
from pathlib import Path

import polars as pl
from pyspark.sql import SparkSession

sys.path.insert(0, str(Path(__file__).resolve().parent))
import engine_bench
import replay_bench
import stream

from replay_assets.core.events import ValidationContext
from replay_assets.storage.rules import canonical_lines
from replay_assets.storage.spark.dialect import shared


def server_cpu(pid: int) -> float:
    """The process's user and system CPU seconds so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main(argv: list[str] | None = None) -> int:
    raw = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=raw)
    parser.add_argument("--lines", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args(argv)
    folder = Path(tempfile.mkdtemp(prefix="tier-bench-"))
    last_business = replay_bench.FIRST_LOAD_DATE - dt.timedelta(days=1)
    frame = stream.stream(args.lines, 6, last_business, "2026-10-01T00:00:00Z").head(args.lines)
    frame.select(
        pl.lit("f.jsonl").alias("source_file"),
        pl.int_range(0, pl.len(), dtype=pl.Int64).alias("line_number"),
        "line",
    ).write_parquet(folder / "lines.parquet")
    ctx = ValidationContext(dt.date(2025, 1, 1), dt.date(2027, 1, 1))
    server = engine_bench.Server()
    spark = SparkSession.builder.remote(server.remote).getOrCreate()
    failed = False
    try:
        spark.read.parquet(str(folder / "lines.parquet")).createOrReplaceTempView("_lines")
        plans = {
            "copy": spark.sql("SELECT * FROM _lines"),
            "rule": shared(spark, canonical_lines.CANONICAL_LINES_SQL, canonical_lines.parameters(ctx)),
        }
        for name, plan in plans.items():
            for _ in range(args.repeat):
                before = server_cpu(server.child.pid)
                plan.write.mode("overwrite").parquet(str(folder / name))
                cpu = server_cpu(server.child.pid) - before
                rows = spark.read.parquet(str(folder / name)).count()
                failed |= rows != args.lines
                per_line, load = cpu / args.lines * 1e6, os.getloadavg()[0]
                print(f"{name}: {rows:,} rows, server CPU {per_line:.1f} us a line (load {load:.1f})")
    finally:
        spark.client.close()
        server.stop()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
