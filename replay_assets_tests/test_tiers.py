"""The README's fast tier: `pytest -m "not slow"` leaves out exactly the slow tier."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def collected(*selections: tuple[str, ...]) -> list[list[str]]:
    """The test ids each selection collects; the collections run at once (each imports every
    test module, about ten seconds)."""
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "pytest", "--collect-only", "-q", "-n", "0", *args],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for args in selections
    ]
    found = []
    for proc in procs:
        out, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err[-2000:]
        found.append([line for line in out.splitlines() if "::" in line])
    return found


def test_the_fast_tier_leaves_out_the_slow_tier_and_nothing_else() -> None:
    everything, fast, slow = collected((), ("-m", "not slow"), ("-m", "slow"))
    assert sorted(fast + slow) == sorted(everything)
    assert fast and slow
    assert not [t for t in fast if "/crash/" in t or "/ui/" in t or "test_lanes_daemon" in t]
    assert any("test_kill_matrix" in t for t in slow) and any("test_runbook" in t for t in slow)
