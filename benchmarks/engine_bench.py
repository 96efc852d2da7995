"""DuckDB against Spark + Delta on a local Sail server, in one invocation: the same generated
stream at each size, ``replay-assets run`` on a fresh home per engine and size, every result
checked against the reference fold.

    uv run python benchmarks/engine_bench.py --events 100000,1000000

Sail runs as a standalone server in a process of its own (started here, one per Spark run), so
the figures of the ``replay-assets run`` process tree are the client's alone: its CPU time (the
children's rusage this process reaps) and its peak RSS (the largest process of the tree). Prints
one table, the Spark/DuckDB wall-time ratio at the largest size and the client's growth from the
smallest size to the largest; exits 1 when any result differs from the reference.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import replay_bench
import stream

RATIO_TARGET = 1.5  # Spark's wall time over DuckDB's at the largest size
CLIENT_TARGET = 1.3  # the Spark client's CPU and peak RSS, largest size over smallest

# a Sail server in a process of its own: prints its port, serves until its stdin closes
_SERVER = (
    "import sys\n"
    "from pysail.spark import SparkConnectServer\n"
    "server = SparkConnectServer(ip='127.0.0.1', port=0)\n"
    "server.start(background=True)\n"
    "print(server.listening_address[1], flush=True)\n"
    "sys.stdin.read()\n"
    "server.stop()\n"
)


@dataclass
class Row:
    engine: str
    events: int
    wall: float
    client_cpu: float
    client_rss: int  # bytes, the largest process of the client's tree
    server_cpu: float | None
    server_rss: int | None
    equal: bool


class Server:
    """A standalone Sail server; its CPU time and peak RSS once stopped."""

    def __init__(self) -> None:
        self.child = subprocess.Popen(
            [sys.executable, "-c", _SERVER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        assert self.child.stdout is not None
        self.remote = f"sc://127.0.0.1:{int(self.child.stdout.readline())}"
        self.cpu = 0.0
        self.rss = 0

    def stop(self) -> None:
        assert self.child.stdin is not None
        self.child.stdin.close()
        _, _, usage = os.wait4(self.child.pid, 0)
        self.child.returncode = 0
        self.cpu = usage.ru_utime + usage.ru_stime
        self.rss = usage.ru_maxrss * 1024


def measure(engine: str, events: int, root: Path, seed: int) -> Row:
    """One ``run`` of a fresh home holding ``events`` generated events in one load date."""
    home = root / f"{engine}-{events}" / "home"
    home.mkdir(parents=True)
    config = {
        "load_date_start": replay_bench.FIRST_LOAD_DATE.isoformat(),
        "business_date_start": "2026-01-01",
    }
    (home / "replay-assets.json").write_text(json.dumps(config))
    server = Server() if engine == "spark" else None
    settings = (
        {"REPLAY_ASSETS_WAREHOUSE": "spark", "REPLAY_ASSETS_SPARK_REMOTE": server.remote} if server else {}
    )
    bench = replay_bench.Bench(home, seed, engine=settings or None)
    try:
        lines = bench.land_stream(events, 1)
        now = f"{bench.day.isoformat()}T23:00:00Z"
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        run = replay_bench.run_pipeline(home, now, "main", lines, engine=settings or None)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        stream.reference_fold(bench.con, bench.parquet)
        if server:
            problems = replay_bench.verify_exports(home, bench.con, {**os.environ, **settings})
        else:
            problems = replay_bench.verify(home, bench.con)
    finally:
        if server:
            server.stop()
    for problem in [*run.notes, *problems]:
        print(f"{engine} {events}: {problem}")
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return Row(
        engine,
        lines,
        run.wall,
        cpu,
        run.peak_rss,
        server.cpu if server else None,
        server.rss if server else None,
        equal=run.exit_code == 0 and not problems,
    )


def table(rows: list[Row]) -> str:
    out = [
        f"{'engine':<8} {'events':>10} {'wall s':>8} {'client CPU s':>13} {'client peak RSS':>16} "
        f"{'server CPU s':>13} {'server peak RSS':>16} equal"
    ]
    for r in rows:
        server_cpu = f"{r.server_cpu:.1f}" if r.server_cpu is not None else "-"
        server_rss = f"{r.server_rss / 2**20:.0f} MiB" if r.server_rss is not None else "-"
        out.append(
            f"{r.engine:<8} {r.events:>10,} {r.wall:>8.1f} {r.client_cpu:>13.1f} "
            f"{r.client_rss / 2**20:>12.0f} MiB {server_cpu:>13} {server_rss:>16} "
            f"{'yes' if r.equal else 'NO'}"
        )
    return "\n".join(out)


def verdicts(rows: list[Row], sizes: list[int]) -> list[str]:
    """The Spark/DuckDB ratio at the largest size and the client's growth, beside their targets."""
    by = {
        (r.engine, s): r for r, s in zip(rows, [s for s in sizes for _ in ("duckdb", "spark")], strict=True)
    }
    small, large = sizes[0], sizes[-1]
    ratio = by["spark", large].wall / by["duckdb", large].wall
    found = [f"Spark/DuckDB wall time at {large:,} events: {ratio:.2f}x (target <= {RATIO_TARGET:g}x)"]
    if large != small:
        cpu = by["spark", large].client_cpu / by["spark", small].client_cpu
        rss = by["spark", large].client_rss / by["spark", small].client_rss
        found.append(
            f"Spark client {large:,} / {small:,} events: CPU {cpu:.2f}x, peak RSS {rss:.2f}x "
            f"(target <= {CLIENT_TARGET:g}x each)"
        )
    return found


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--events", default="100000,1000000", help="the sizes, comma-separated, smallest first")
    p.add_argument("--seed", type=int, default=6)
    p.add_argument("--home", help="keep the homes here (default: a temporary folder, removed)")
    args = p.parse_args(argv)
    sizes = [int(n) for n in args.events.split(",")]
    root = Path(args.home) if args.home else Path(tempfile.mkdtemp(prefix="replay-engines-"))
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} cores")
    started = time.monotonic()
    rows = []
    for n in sizes:
        for engine in ("duckdb", "spark"):
            rows.append(measure(engine, n, root, args.seed))
            print(f"measured {engine} at {n:,} events: {rows[-1].wall:.1f} s", flush=True)
    print(table(rows))
    for line in verdicts(rows, sizes):
        print(line)
    print(
        f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}; "
        f"{time.monotonic() - started:.0f} s in all"
    )
    if not args.home:
        shutil.rmtree(root, ignore_errors=True)
    return 0 if all(r.equal for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
