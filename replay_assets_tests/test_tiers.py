"""The README's fast tier: `pytest -m "not slow"` leaves out exactly the slow tier, and still
runs a test of every module outside the slow modules (it is the developers' loop)."""

import subprocess
import sys
from pathlib import Path

import pytest

from replay_assets_tests.conftest import SLOW_MODULES, SLOW_TESTS

ROOT = Path(__file__).resolve().parents[1]

# Modules of one child-process or server test each, slow by their own marker: none has a cheap
# test the fast tier could keep.
WHOLLY_SLOW = (
    "scenarios/test_seeds_on_both_engines.py",
    "test_cli_spark.py",
    "test_ui_command.py",
    "test_wheel.py",
)


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


@pytest.fixture(scope="module")
def tiers() -> list[list[str]]:
    """Everything, the fast tier and the slow tier, collected once for this module's tests."""
    return collected((), ("-m", "not slow"), ("-m", "slow"))


def module_of(test_id: str) -> str:
    """The module of a collected test id, relative to the test package."""
    return test_id.split("::")[0].removeprefix("replay_assets_tests/")


def test_the_fast_tier_leaves_out_the_slow_tier_and_nothing_else(tiers: list[list[str]]) -> None:
    everything, fast, slow = tiers
    assert sorted(fast + slow) == sorted(everything)
    assert fast and slow
    assert not [t for t in fast if "/crash/" in t or "/ui/" in t or "test_lanes_daemon" in t]
    assert any("test_kill_matrix" in t for t in slow) and any("test_runbook" in t for t in slow)


def test_every_module_keeps_a_fast_test_and_every_slow_name_is_a_test(tiers: list[list[str]]) -> None:
    everything, fast, _ = tiers
    names = {t.split("::")[-1].split("[")[0] for t in everything}
    assert [n for n in SLOW_TESTS if n not in names] == []
    left_out = {module_of(t) for t in everything} - {module_of(t) for t in fast}
    assert sorted(m for m in left_out if not m.startswith(SLOW_MODULES + WHOLLY_SLOW)) == []
