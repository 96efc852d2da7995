"""The production-volume benchmark at a tiny size, so it keeps working (no timing asserted):
the pipeline's published tables equal the bare reference fold of the same generated stream."""

import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "replay_bench.py"


def test_benchmark_pipeline_equals_reference_fold(tmp_path: Path) -> None:
    args = ["--events", "2000", "--correction", "100", "--cases", "main,incremental", "--home", str(tmp_path)]
    done = subprocess.run(
        [sys.executable, str(SCRIPT), *args],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    rows = [line.split() for line in done.stdout.splitlines() if line.startswith(("main", "incremental"))]
    assert [(row[0], row[-1]) for row in rows] == [("main", "yes"), ("incremental", "yes")]


def test_the_peer_shape_folds_the_delivered_jsonl_and_prints_the_ratio(tmp_path: Path) -> None:
    """Issue 16's peer workload at a tiny size: 5 load dates of 3 batches, the reference read from
    the JSONL files the pipeline landed, equal tables, and the ratio printed."""
    args = ["--peer-shape", "--events", "1500", "--cases", "main", "--home", str(tmp_path)]
    done = subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert len(list((tmp_path / "home" / "landing" / "erp").glob("*/*.manifest.json"))) == 15
    assert [line.split()[-1] for line in done.stdout.splitlines() if line.startswith("main")] == ["yes"]
    assert "peer shape: 1500 events over 5 load dates x 3 batches" in done.stdout
    assert "target <= 12x" in done.stdout
