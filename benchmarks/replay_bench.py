"""Benchmark at production volume: the real pipeline through ``replay-assets run``
against a bare set-based DuckDB fold of the same events, measured in the same invocation.

    uv run python benchmarks/replay_bench.py --events 1000000 [--days 1] [--steady-days 0]

Prints one table (events, wall s, events/s, peak RSS, ratio to the reference) and exits 1 when
any pipeline table differs from the reference's.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import duckdb
import polars as pl

from replay_assets.storage.db import segments

sys.path.insert(0, str(Path(__file__).resolve().parent))
import stream

FIRST_LOAD_DATE = dt.date(2026, 10, 1)
CORRECTION_EVENTS = 10_000
CASES = ("main", "noop", "incremental", "uniform")
# the peers' benchmark: 1.15M events over 5 load dates of 3 batches, JSONL
PEER_EVENTS, PEER_DAYS, PEER_BATCHES = 1_150_000, 5, 3
PEER_TARGET = 15.0  # the peers' workload, over the bare JSONL fold (the correct peer takes 18x)


@dataclass
class Measured:
    case: str
    events: int
    wall: float
    peak_rss: int  # bytes, the largest single process (VmHWM, polled every 50 ms)
    sum_rss: int  # bytes, the largest sum over the process tree at one instant
    processes: int
    exit_code: int
    reference: float | None = None
    equal: bool | None = None
    notes: list[str] = field(default_factory=list)


def _tree(root: int) -> list[int]:
    """``root`` and its descendants, from /proc (Linux; no dependency)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as fh:
                    parent = int(fh.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(parent, []).append(int(entry))
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(children.get(pid, []))
    return out


def _status_kib(pid: int, field_name: str) -> int:
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith(field_name + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


@dataclass(frozen=True)
class Probe:
    """One ``replay-assets status --json`` while the run went on."""

    seconds: float
    exit_code: int
    source: str  # warehouse, or the published copy while the writer held the warehouse
    in_progress: str  # "use case load date" the writer was doing, or ""


def probe_status(home: Path, env: dict[str, str]) -> Probe:
    command = [str(Path(sys.executable).parent / "replay-assets"), "status", "--json", "--home", str(home)]
    started = time.monotonic()
    child = subprocess.run(command, env=env, capture_output=True, text=True)
    seconds = time.monotonic() - started
    try:
        document = json.loads(child.stdout)
    except ValueError:
        return Probe(seconds, child.returncode, "unreadable output", "")
    doing = document.get("in_progress") or {}
    doing_text = f"{doing['use_case']} {doing['partition']}" if doing else ""
    return Probe(seconds, child.returncode, str(document.get("source")), doing_text)


def run_pipeline(
    home: Path,
    now: str,
    case: str,
    events: int,
    profile: str | None = None,
    probe_every: float = 0,
    engine: dict[str, str] | None = None,
) -> Measured:
    """``replay-assets run --home H`` as a child process; wall time and the tree's peak RSS.
    ``profile``: a folder for py-spy's raw stacks of the run (py-spy on PATH; figures then
    include its overhead). ``probe_every``: run ``status --json`` every that many seconds
    while the run goes on, recording how long each took and what it said. ``engine``: the
    warehouse settings (``REPLAY_ASSETS_WAREHOUSE``...) of the run."""
    command = [str(Path(sys.executable).parent / "replay-assets"), "run", "--home", str(home)]
    if profile:
        out = Path(profile) / f"{case}.txt"
        out.parent.mkdir(parents=True, exist_ok=True)
        command = ["py-spy", "record", "--idle", "-r", "50", "-f", "raw", "-o", str(out), "--", *command]
    env = {**os.environ, **(engine or {}), "REPLAY_ASSETS_NOW": now}
    started = time.monotonic()
    child = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    peaks: dict[int, int] = {}
    sum_peak = [0]
    done = threading.Event()

    def poll() -> None:
        while not done.is_set():
            total = 0
            for pid in _tree(child.pid):
                total += _status_kib(pid, "VmRSS")
                peaks[pid] = max(peaks.get(pid, 0), _status_kib(pid, "VmHWM"))
            sum_peak[0] = max(sum_peak[0], total)
            done.wait(0.05)

    probes: list[Probe] = []

    def probe() -> None:
        while not done.wait(probe_every):
            probes.append(probe_status(home, env))

    poller = threading.Thread(target=poll, daemon=True)
    poller.start()
    prober = threading.Thread(target=probe, daemon=True)
    if probe_every:
        prober.start()
    output = child.stdout.read() if child.stdout else b""
    # not wait4's ru_maxrss: Linux carries the parent's RSS at fork into the child's maximum
    _, status = os.waitpid(child.pid, 0)
    wall = time.monotonic() - started
    done.set()
    poller.join()
    if probe_every:
        prober.join()
    child.returncode = os.waitstatus_to_exitcode(status)
    text = output.decode("utf-8", "replace")
    (home / f"run-{case}.log").write_text(text)
    notes = [line for line in text.splitlines() if "FAILED" in line or line.startswith("error")][:5]
    if probes:
        times = sorted(p.seconds for p in probes)
        doing = [p for p in probes if p.in_progress]
        notes.append(
            f"status during the run: {len(probes)} probes, median {times[len(times) // 2]:.2f} s, "
            f"max {times[-1]:.2f} s, exit codes {sorted({p.exit_code for p in probes})}, "
            f"sources {sorted({p.source for p in probes})}, {len(doing)} named the work in progress "
            f"(e.g. {doing[0].in_progress if doing else '-'})"
        )
    return Measured(
        case,
        events,
        wall,
        max(peaks.values(), default=0) * 1024,
        max(sum_peak[0], max(peaks.values(), default=0)) * 1024,
        len(peaks),
        child.returncode,
        notes=notes,
    )


def verify(home: Path, con: duckdb.DuckDBPyConnection) -> list[str]:
    """Differences between the published copy and the reference (empty: equal)."""
    pub = home / "published"
    con.execute("SET VARIABLE replay_assets_home = ?", [str(home.resolve())])
    con.execute("ATTACH ? AS pub (READ_ONLY)", [str(home / "published.duckdb")])
    pairs = {
        "current_orders": ("SELECT * FROM pub.current_orders", "ref_orders"),
        "current_customers": ("SELECT * FROM pub.current_customers", "ref_customers"),
        "daily_aggregates": (
            f"""SELECT store_id, business_date, order_count, line_count, units, amount_minor,
                       cost_minor, gross_profit_minor
                FROM read_parquet('{pub / "daily_aggregates" / "*.parquet"}', union_by_name = true)""",
            "ref_aggregates",
        ),
    }
    problems = []
    for name, (published, reference) in pairs.items():
        for left, right in ((published, f"FROM {reference}"), (f"FROM {reference}", published)):
            missing = con.execute(f"SELECT count(*) FROM ({left} EXCEPT ALL {right})").fetchall()[0][0]
            if missing:
                problems.append(f"{name}: {missing} rows of one side missing from the other")
    con.execute("DETACH pub")  # the next refresh replaces published.duckdb
    return problems


def verify_exports(home: Path, con: duckdb.DuckDBPyConnection, env: dict[str, str]) -> list[str]:
    """Differences between the consumer tables ``replay-assets export`` writes (any engine) and
    the reference (empty: equal)."""
    columns = {
        "current_orders": "*",
        "current_customers": "*",
        "daily_aggregates": "store_id, business_date, order_count, line_count, units, amount_minor, "
        "cost_minor, gross_profit_minor",
    }
    references = {"current_orders": "ref_orders", "current_customers": "ref_customers"}
    problems = []
    for name, selected in columns.items():
        out = home.parent / f"export-{name}.parquet"
        command = [str(Path(sys.executable).parent / "replay-assets"), "export", name, "--home", str(home)]
        subprocess.run([*command, "--format", "parquet", "--output", str(out)], env=env, check=True)
        exported = f"SELECT {selected} FROM read_parquet('{out}')"
        reference = f"SELECT {selected} FROM {references.get(name, 'ref_aggregates')}"
        for left, right in ((exported, reference), (reference, exported)):
            missing = con.execute(f"SELECT count(*) FROM ({left} EXCEPT ALL {right})").fetchall()[0][0]
            if missing:
                problems.append(f"{name}: {missing} rows of one side missing from the other")
    return problems


class Bench:
    def __init__(
        self,
        home: Path,
        seed: int,
        profile: str | None = None,
        probe_every: float = 0,
        peer_shape: bool = False,
        engine: dict[str, str] | None = None,
    ) -> None:
        self.home = home
        self.engine = engine or {}
        self.profile = profile
        self.probe_every = probe_every
        self.seed = seed
        # the peers' benchmark: PEER_BATCHES batches a load date, the bare fold from the JSONL
        self.peer_shape = peer_shape
        self.jsonl: list[str] = []
        self.parquet: list[str] = []
        self.next_base = 0
        self.day = FIRST_LOAD_DATE
        self.con = duckdb.connect()
        self.rows: list[Measured] = []

    def land_stream(self, events: int, days: int, same_orders: bool = False) -> int:
        """Generate ``events`` spread over ``days`` new load dates (new orders, or with
        ``same_orders`` the first day's orders changed again); returns lines delivered."""
        last_business = FIRST_LOAD_DATE - dt.timedelta(days=1)
        seed = self.seed + self.next_base
        key_base = 0 if same_orders else None
        frame = stream.stream(events, seed, last_business, self._time(), self.next_base, key_base)
        self.next_base = stream.max_seq(frame) + 1
        frame = frame.with_columns(stream.pick(pl.int_range(0, pl.len()), self.seed + 99, days).alias("day"))
        for d in range(days):
            part = frame.filter(pl.col("day") == d).drop("day")
            self._deliver(part, "CDC")
            if d < days - 1:
                self.day += dt.timedelta(days=1)
        return frame.height

    def land_correction(self, events: int, concentrated: bool) -> int:
        """A new load date of upserts that change amounts of active lines: concentrated on the
        last 7 business days, or uniform over every business date."""
        self.day += dt.timedelta(days=1)
        where = "status = 'active'"
        if concentrated:
            where += " AND business_date > (SELECT max(business_date) - 7 FROM ref_orders)"
        keys = self.con.sql(
            f"SELECT * FROM ref_orders WHERE {where} ORDER BY hash(order_id, line_no, ?) LIMIT ?",
            params=[self.seed, events],
        ).pl()
        frame = keys.with_columns(
            (pl.int_range(0, pl.len(), dtype=pl.Int64) + self.next_base).alias("seq"),
            (pl.col("amount_minor") + 1).alias("amount"),
            pl.col("cost_minor").alias("cost"),
            pl.col("business_date").cast(pl.String),
            pl.lit("upsert").alias("op"),
            pl.lit("order_line").alias("entity"),
            pl.lit(None, pl.String).alias("name"),
            pl.lit(None, pl.String).alias("segment"),
        ).with_columns(pl.col("seq").alias("version"))
        self.next_base += frame.height
        frame = frame.with_columns(stream.order_line_json(frame, self._time()).alias("line"))
        self._deliver(frame.select(stream.REFERENCE_COLUMNS), "FIX")
        return int(frame.height)

    def _time(self) -> str:
        return f"{self.day.isoformat()}T00:00:00Z"

    def _deliver(self, frame: pl.DataFrame, tag: str) -> None:
        day = self.day.isoformat()
        batches = max(2, -(-frame.height // stream.MAX_BATCH_EVENTS))
        if self.peer_shape:
            batches = max(PEER_BATCHES, batches)
        ids = stream.deliver(self.home / "landing", day, tag, frame, batches)
        folder = self.home / "landing" / stream.SOURCE / day
        self.jsonl += [str(folder / f"{i}.jsonl") for i in ids if (folder / f"{i}.jsonl").exists()]
        path = self.home.parent / f"{self.home.name}-reference" / f"{day}-{tag}.parquet"
        stream.keep_for_reference(frame, day, path)
        self.parquet.append(str(path))

    def measure(self, case: str, events: int, with_reference: bool = True) -> Measured:
        now = f"{self.day.isoformat()}T23:00:00Z"
        result = run_pipeline(
            self.home, now, case, events, self.profile, self.probe_every, engine=self.engine
        )
        started = time.monotonic()
        if self.peer_shape:
            stream.reference_fold_jsonl(self.con, self.jsonl)
        else:
            stream.reference_fold(self.con, self.parquet)
        reference = time.monotonic() - started
        result.reference = reference if with_reference else None
        if self.engine:
            problems = verify_exports(self.home, self.con, {**os.environ, **self.engine})
        else:
            problems = verify(self.home, self.con)
        result.equal = not problems and result.exit_code == 0
        result.notes += problems
        self.rows.append(result)
        return result

    def growth(self) -> dict[str, int]:
        """Registry and history rows and the warehouse's size (read-only, after a run)."""
        con = duckdb.connect(str(self.home / "warehouse.duckdb"), read_only=True)
        segments.bind(con, self.home, create=False)
        try:
            counts = {
                t: int(con.execute(f"SELECT count(*) FROM {t}").fetchone()[0])  # type: ignore[index]
                for t in ("event_registry", "order_history", "raw_receipts", "staged_events")
            }
            counts["evidence_rows"] = sum(  # the evidence tables retention bounds
                int(con.execute(f"SELECT count(*) FROM {t}").fetchone()[0])  # type: ignore[index]
                for t in ("operations", "operation_audit", "step_attempts", "costs")
            )
        finally:
            con.close()
        counts["warehouse_bytes"] = (self.home / "warehouse.duckdb").stat().st_size + sum(
            f.stat().st_size for f in (self.home / segments.FOLDER).rglob("*") if f.is_file()
        )  # the warehouse is the file and the landing's segment files (schema v13)
        counts["published_bytes"] = sum(
            f.stat().st_size for f in (self.home / "published").rglob("*") if f.is_file()
        )
        return counts


def table(rows: list[Measured]) -> str:
    head = (
        f"{'case':<12} {'events':>10} {'wall s':>8} {'events/s':>10} {'peak RSS':>9} "
        f"{'sum RSS':>9} {'procs':>5} {'ref s':>7} {'ratio':>6} equal"
    )
    out = [head, "-" * len(head)]
    for r in rows:
        rate = r.events / r.wall if r.wall else 0.0
        ref = f"{r.reference:7.2f}" if r.reference is not None else f"{'':>7}"
        ratio = f"{r.wall / r.reference:6.1f}" if r.reference else f"{'':>6}"
        out.append(
            f"{r.case:<12} {r.events:>10} {r.wall:8.2f} {rate:10.0f} {_gib(r.peak_rss):>9} "
            f"{_gib(r.sum_rss):>9} {r.processes:>5} {ref} {ratio} {'yes' if r.equal else 'NO'}"
        )
        out.extend(f"    {note}" for note in r.notes)
    return "\n".join(out)


def curve(rows: list[Measured], growth: list[dict[str, int]]) -> str:
    """Each steady day: its wall time and what the home holds after it."""
    head = (
        f"{'day':>4} {'wall s':>7} {'warehouse MiB':>13} {'published MiB':>13} {'raw rows':>10} "
        f"{'staged':>10} {'registry':>10} {'history':>10} {'evidence':>8}"
    )
    out = [head, "-" * len(head)]
    steady = [r for r in rows if r.case.startswith("steady+")]
    for r, g in zip(steady, growth, strict=True):
        out.append(
            f"{g['day'] + 1:>4} {r.wall:7.1f} {g['warehouse_bytes'] / 2**20:13.0f} "
            f"{g['published_bytes'] / 2**20:13.0f} {g['raw_receipts']:>10} {g['staged_events']:>10} "
            f"{g['event_registry']:>10} {g['order_history']:>10} {g['evidence_rows']:>8}"
        )
    return "\n".join(out)


def _gib(n: int) -> str:
    return f"{n / 2**30:.2f}G"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--events", type=int, help=f"events of the main stream (--peer-shape: {PEER_EVENTS})")
    p.add_argument(
        "--peer-shape",
        action="store_true",
        help=f"the peers' workload: {PEER_DAYS} load dates x {PEER_BATCHES} batches, the reference folds the "
        "delivered JSONL (typed read_json) in the same invocation; prints the ratio",
    )
    p.add_argument("--days", type=int, default=1, help="load dates the main stream is spread over")
    p.add_argument("--seed", type=int, default=6)
    p.add_argument("--cases", default=",".join(CASES))
    p.add_argument("--correction", type=int, default=CORRECTION_EVENTS)
    p.add_argument("--steady-days", type=int, default=0, help="further days of --events each, one run a day")
    p.add_argument(
        "--steady-keys",
        choices=("new", "same"),
        default="new",
        help="a steady day brings new orders (the state grows) or changes the same ones (it does not)",
    )
    p.add_argument(
        "--probe-status", type=float, default=0, help="run `status --json` every S seconds during runs"
    )
    p.add_argument("--retention", type=int, help="retention_load_dates of the home (default: the product's)")
    p.add_argument("--home", help="keep the home here (default: a temporary folder, removed)")
    p.add_argument("--json", help="also write the figures to this file")
    p.add_argument("--profile", help="folder for py-spy raw stacks of each run (py-spy on PATH)")
    p.add_argument(
        "--warehouse",
        choices=["duckdb", "spark"],
        default="duckdb",
        help="the warehouse engine; spark: Delta tables through an embedded Sail server per run",
    )
    args = p.parse_args(argv)
    if args.warehouse == "spark" and args.steady_days:
        p.error("--steady-days reads the DuckDB warehouse's growth; use it with --warehouse duckdb")
    if args.peer_shape:
        args.events = args.events or PEER_EVENTS
        args.days = PEER_DAYS
    if not args.events:
        p.error("--events is required (or --peer-shape)")
    cases = args.cases.split(",")
    root = Path(args.home) if args.home else Path(tempfile.mkdtemp(prefix="replay-bench-"))
    home = root / "home"
    home.mkdir(parents=True, exist_ok=True)
    config: dict[str, object] = {
        "load_date_start": FIRST_LOAD_DATE.isoformat(),
        "business_date_start": "2026-01-01",
    }
    if args.retention is not None:
        config["retention_load_dates"] = args.retention
    (home / "replay-assets.json").write_text(json.dumps(config))
    engine = {"REPLAY_ASSETS_WAREHOUSE": "spark", "REPLAY_ASSETS_SPARK_REMOTE": "local"}
    bench = Bench(
        home,
        args.seed,
        args.profile,
        args.probe_status,
        peer_shape=args.peer_shape,
        engine=engine if args.warehouse == "spark" else None,
    )
    started = time.monotonic()
    lines = bench.land_stream(args.events, args.days)
    print(f"generated {lines} lines over {args.days} load dates in {time.monotonic() - started:.1f} s")
    bench.measure("main", lines)
    if "noop" in cases:
        bench.measure("noop", 0, with_reference=False)
    if "incremental" in cases:
        bench.measure("incremental", bench.land_correction(args.correction, concentrated=True))
    if "uniform" in cases:
        bench.measure("uniform", bench.land_correction(args.correction, concentrated=False))
    growth = []
    for day in range(args.steady_days):
        bench.day += dt.timedelta(days=1)
        bench.measure(f"steady+{day + 1}", bench.land_stream(args.events, 1, args.steady_keys == "same"))
        growth.append({"day": day + 1, **bench.growth()})
    print(table(bench.rows))
    main_row = bench.rows[0]
    if args.peer_shape and main_row.reference:
        ratio = main_row.wall / main_row.reference
        print(
            f"peer shape: {main_row.events} events over {PEER_DAYS} load dates x {PEER_BATCHES} batches: "
            f"{main_row.wall:.1f} s against the bare JSONL fold's {main_row.reference:.2f} s in this "
            f"invocation = {ratio:.1f}x (target <= {PEER_TARGET:g}x)"
        )
    if growth:
        print(curve(bench.rows, growth))
    if args.json:
        Path(args.json).write_text(json.dumps([r.__dict__ for r in bench.rows] + growth, indent=1))
    if not args.home:
        shutil.rmtree(root, ignore_errors=True)
    return 0 if all(r.equal for r in bench.rows) else 1


if __name__ == "__main__":
    sys.exit(main())
