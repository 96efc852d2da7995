"""A kill while a late delivery re-applies its chain (issue 14, item 1): consumers see the old
chain or the whole new one, never a mix, and the next backfill completes it to exactly the
result of the batch delivered on time. SIGKILL in a child process at the chain's own point
(between two re-applied dates, inside the one transaction) and at the journal's points."""

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from replay_assets.core.status import ApplyOutcome
from replay_assets.usecases.apply import apply
from replay_assets.usecases.context import Pipeline
from replay_assets.usecases.land import land
from replay_assets_tests.helpers import drive, settings_for
from replay_assets_tests.storage.test_bad_input import D1, D2, D3, NOW
from replay_assets_tests.storage.test_late_delivery import _everything, late_scenario

CHILD = """
import sys
from pathlib import Path
from replay_assets.core.manifest import parse_instant
from replay_assets.core.config import Settings
from replay_assets.usecases.apply import apply
from replay_assets.usecases.context import Pipeline
from replay_assets.usecases.land import land
now = parse_instant(sys.argv[2], "now")
p = Pipeline(Settings(home=Path(sys.argv[1]), fixed_now=now, fail_point=sys.argv[4]))
land(p, sys.argv[3], sealed_ok=True)
apply(p, sys.argv[3], None, sealed_ok=True)
"""
POINTS = [
    "restate.between_dates",
    "apply_load_date:inside_target",
    "apply_load_date:after_target_commit",
    "apply_load_date:before_evidence",
]


def consumers(p: Pipeline) -> list[Any]:
    with p.warehouse.connect() as con:
        return con.execute("SELECT * FROM current_orders ORDER BY ALL").fetchall()


@pytest.fixture(scope="module")
def on_time(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return _everything(late_scenario(tmp_path_factory.mktemp("on-time"), on_time=True), [D1, D2, D3])


@pytest.mark.parametrize("point", POINTS)
def test_a_kill_during_the_chain_leaves_old_or_new_and_the_next_backfill_completes_it(
    point: str, tmp_path: Path, on_time: dict[str, Any]
) -> None:
    p = late_scenario(tmp_path / "home", on_time=False)
    before = consumers(p)
    child = subprocess.run(
        [sys.executable, "-c", CHILD, str(p.settings.home), NOW, D2, point], capture_output=True, text=True
    )
    assert child.returncode == -9, child.stderr[-2000:]  # killed where told
    after_kill = consumers(Pipeline(settings_for(p.settings.home, NOW)))
    assert after_kill in (before, on_time["consumer orders"])  # never a mix
    assert (after_kill == before) == (point.startswith("restate") or point.endswith("inside_target"))

    again = Pipeline(settings_for(p.settings.home, NOW))  # the next backfill
    land(again, D2, sealed_ok=True)
    assert apply(again, D2, None, sealed_ok=True).status is ApplyOutcome.RESTATED
    apply(again, D3, None, sealed_ok=True)
    drive(again)
    assert _everything(again, [D1, D2, D3]) == on_time
