"""The production-volume benchmark at a tiny size, so it keeps working (no timing asserted): in
the peers' shape (issue 16: 5 load dates of 3 batches, the reference folding the delivered JSONL
in the same invocation) and with a correction after it, the pipeline's published tables equal the
bare reference fold of the same generated stream, and the ratio is printed; the fold benchmark
folds that home's first load date again under two memory limits; the landing benchmark prints
each part of landing a line, on lines the grammar certifies."""

import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "replay_bench.py"
FOLD_BENCH = SCRIPT.with_name("fold_bench.py")
APPLY_BENCH = SCRIPT.with_name("apply_bench.py")
APPLY_STEPS = [
    "stage_fold",
    "affected_groups",
    "write_history",
    "register_events",
    "digest_change",
    "controls_by_change",
    "check_written",
    "advance_latest",
    "drop_fold",
    "commit",
]


def test_benchmark_pipeline_equals_reference_fold(tmp_path: Path) -> None:
    args = ["--peer-shape", "--events", "1500", "--correction", "100", "--cases", "main,incremental"]
    done = subprocess.run(
        [sys.executable, str(SCRIPT), *args, "--home", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    rows = [line.split() for line in done.stdout.splitlines() if line.startswith(("main", "incremental"))]
    assert [(row[0], row[-1]) for row in rows] == [("main", "yes"), ("incremental", "yes")]
    assert len(list((tmp_path / "home" / "landing" / "erp").glob("*/*.manifest.json"))) == 5 * 3 + 3
    assert "peer shape: 1500 events over 5 load dates x 3 batches" in done.stdout
    assert "target <= 15x" in done.stdout
    # the fold benchmark stages the home's first load date again, alike under each memory limit
    folded = subprocess.run(
        [
            sys.executable,
            str(FOLD_BENCH),
            str(tmp_path / "home" / "warehouse.duckdb"),
            "--limits",
            "1GB,100MB",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert folded.returncode == 0, folded.stdout + folded.stderr
    lines = folded.stdout.splitlines()
    assert [line.split()[0] for line in lines[1:]] == ["1GB", "100MB"]
    assert lines[1].split("  ")[-1] == lines[2].split("  ")[-1]
    outcomes = [part.split() for part in lines[1].split("  ")[-1].split(", ")]
    assert outcomes[0][0] == "accepted"
    assert all(int(winners) <= int(events) for _, events, winners in outcomes)
    assert 300 <= sum(int(events) for _, events, _ in outcomes) < 400  # about 1500 / 5, duplicates too
    # the apply benchmark undoes the newest load date and applies it again: the same rows, by step
    applied = subprocess.run(
        [sys.executable, str(APPLY_BENCH), str(tmp_path / "home" / "warehouse.duckdb")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert applied.returncode == 0, applied.stdout + applied.stderr
    lines = applied.stdout.splitlines()
    steps = [line.split()[0] for line in lines[1:] if not line.startswith(" ")]  # then total, rows
    assert steps[: len(APPLY_STEPS)] == APPLY_STEPS
    written = dict(part.rsplit(" ", 1) for part in lines[-2].removeprefix("rows written: ").split(", "))
    assert int(written["order_history"]) > 0 and int(written["event_registry"]) > 0
    assert lines[-1] == "rows differing from the first apply: 0"


def test_profile_summary_charges_a_statement_helper_to_its_caller(tmp_path: Path) -> None:
    root = "<module> (replay-assets:10);entry (/x/replay_assets/entrypoints/cli.py:402)"
    insert = f"{root};_insert_staged (/x/replay_assets/storage/landing/ingest.py:175)"
    raw = tmp_path / "main.txt"
    raw.write_text(
        f"{insert} 30\n"
        f"{root};_sums (/x/replay_assets/storage/apply/state_digest.py:100);"
        "one (/x/replay_assets/storage/db/warehouse.py:302);fetchall (duckdb/x.py:1) 20\n"
        "_bootstrap (threading.py:995);run (threading.py:975) 10\n",
        encoding="utf-8",
    )
    done = subprocess.run(
        [sys.executable, str(SCRIPT.with_name("profile_summary.py")), str(raw), "--rate", "10"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    rows = [line.split(maxsplit=2) for line in done.stdout.splitlines()[1:]]
    assert rows == [
        ["3.00", "50.0%", "_insert_staged (storage/landing/ingest.py:175)"],
        ["2.00", "33.3%", "_sums (storage/apply/state_digest.py:100)"],
        ["1.00", "16.7%", "(outside the project) _bootstrap (threading.py:995)"],
        ["6.00", "100%", "all samples"],
    ]


def test_landing_bench_prints_the_cpu_of_each_part_of_landing_a_line() -> None:
    done = subprocess.run(
        [sys.executable, str(SCRIPT.with_name("landing_bench.py")), "--lines", "3000", "--repeat", "1"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("3,000 lines of the benchmark's stream")
    parts = [line[17:51].strip() for line in lines[2:-1]]
    assert parts == [
        "read, sha256, split",
        "pickle a chunk to a worker",
        "grammar match (polars regex)",
        "extract, check, texts (DuckDB)",
        "content and image sha256",
        "every line's sha256",
        "Parquet: receipts (zstd)",
        "Parquet: staged events (zstd)",
        "prepare (the whole job)",
    ]
    assert all(float(line.split()[-1]) > 0 for line in lines[2:-1])
    assert lines[-1].startswith("at 10,000,000 lines on ")


def test_engine_bench_prints_both_engines_the_ratio_and_the_client_figures() -> None:
    done = subprocess.run(
        [sys.executable, str(SCRIPT.with_name("engine_bench.py")), "--events", "300,600"],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    lines = [line for line in done.stdout.splitlines() if not line.startswith(("[", "measured "))]
    assert lines[0].startswith("load average at start: ")
    rows = [line.split() for line in lines[2:6]]
    assert [(row[0], row[-1]) for row in rows] == [("duckdb", "yes"), ("spark", "yes")] * 2
    assert all(float(row[3]) > 0 and float(row[4]) > 0 for row in rows)  # client CPU s and peak RSS
    assert rows[1][6] != "-" and rows[0][6] == "-"  # the server's figures, on Spark only
    assert lines[6].startswith("Spark/DuckDB wall time at ") and lines[6].endswith("(target <= 1.5x)")
    assert lines[7].startswith("Spark client ") and lines[7].endswith("(target <= 1.3x each)")
    assert lines[8].startswith("load average at end: ")
