"""The README's fast tier: `pytest -m "not slow"` leaves out exactly the slow tier."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def collected(*args: str) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-n", "0", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    return [line for line in done.stdout.splitlines() if "::" in line]


def test_the_fast_tier_leaves_out_the_slow_tier_and_nothing_else() -> None:
    everything, fast, slow = collected(), collected("-m", "not slow"), collected("-m", "slow")
    assert sorted(fast + slow) == sorted(everything)
    assert fast and slow
    assert not [t for t in fast if "/crash/" in t or "/ui/" in t or "test_lanes_daemon" in t]
    assert any("test_kill_matrix" in t for t in slow) and any("test_runbook" in t for t in slow)
