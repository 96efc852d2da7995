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
