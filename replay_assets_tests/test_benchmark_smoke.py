"""The production-volume benchmark at a tiny size, so it keeps working (no timing asserted): in
the peers' shape (issue 16: 5 load dates of 3 batches, the reference folding the delivered JSONL
in the same invocation) and with a correction after it, the pipeline's published tables equal the
bare reference fold of the same generated stream, and the ratio is printed."""

import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "replay_bench.py"


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
    assert "target <= 12x" in done.stdout
