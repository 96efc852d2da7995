"""A kill while pruning behind the horizon (issue 14, item 3): each pruning is a journaled
operation, so SIGKILL anywhere in it leaves the date pruned or not (never half), and what `run`
does next (finish the in-doubt evidence, prune what is due, apply the rest) ends exactly where an
uninterrupted run ends, with one pruning per date. The child prunes through the use cases."""

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from replay_assets.storage.landing.deliveries import write_delivery
from replay_assets.usecases.context import Pipeline
from replay_assets.usecases.prune import prune
from replay_assets.usecases.recover import finish_in_doubt
from replay_assets_tests.helpers import drive, settings_for
from replay_assets_tests.storage.test_bad_input import D1, D2, D3, NOW, SOURCE, event

CHILD = """
import sys
from pathlib import Path
from replay_assets.core.config import Settings
from replay_assets.core.manifest import parse_instant
from replay_assets.usecases.context import Pipeline
from replay_assets_tests.helpers import drive
p = Pipeline(Settings(home=Path(sys.argv[1]), fixed_now=parse_instant(sys.argv[2], "now"),
                      fail_point=sys.argv[3], retention_load_dates=1))
drive(p)
"""
POINTS = [
    "prune_load_date:after_intent",
    "prune_load_date:inside_target",
    "prune_load_date:after_target_commit",
    "prune_load_date:before_evidence",
    "prune_load_date:inside_target#2",  # the second date's pruning
]
FACTS = {
    "history": "SELECT * FROM order_history ORDER BY ALL",
    "pruned": "SELECT * FROM pruned_load_dates ORDER BY ALL",
    "per date": """SELECT 'raw', load_date, count(*) FROM raw_receipts GROUP BY ALL
        UNION ALL SELECT 'staged', load_date, count(*) FROM staged_events GROUP BY ALL
        UNION ALL SELECT 'registry', load_date, count(*) FROM event_registry GROUP BY ALL ORDER BY ALL""",
    "consumers": "SELECT * FROM current_orders ORDER BY ALL",
    "pointers": "SELECT * FROM pointers ORDER BY ALL",
    "prunings": "SELECT partition_key, state FROM operations WHERE kind = 'prune_load_date' ORDER BY ALL",
}


def _scenario(home: Path) -> Pipeline:
    p = Pipeline(settings_for(home, NOW, retention_load_dates=1))
    days = {
        D1: [event(1, "o1"), event(2, "o2")],
        D2: [event(3, "o1", amount_minor=5), event(2, "o2"), event(4, "o3")],
        D3: [event(5, "o2", op="delete"), event(1, "o1")],
    }
    for n, (day, lines) in enumerate(days.items()):
        write_delivery(p.settings.landing, SOURCE, day, f"b{n}", lines, f"{day}T06:00:00Z")
    return p


def facts(p: Pipeline) -> dict[str, Any]:
    with p.warehouse.connect() as con:
        return {name: con.execute(sql).fetchall() for name, sql in FACTS.items()}


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    p = _scenario(tmp_path_factory.mktemp("uninterrupted") / "home")
    drive(p)
    return facts(p)


@pytest.mark.parametrize("point", POINTS)
def test_a_kill_while_pruning_then_the_next_run_ends_where_an_uninterrupted_one_does(
    point: str, tmp_path: Path, uninterrupted: dict[str, Any]
) -> None:
    p = _scenario(tmp_path / "home")
    child = subprocess.run(
        [sys.executable, "-c", CHILD, str(p.settings.home), NOW, point], capture_output=True, text=True
    )
    assert child.returncode == -9, child.stderr[-2000:]  # killed where told
    killed = facts(p)
    assert killed["pruned"] != uninterrupted["pruned"]  # the kill landed before the last pruning
    assert len(killed["pruned"]) == len({r[0] for r in killed["pruned"]})

    again = Pipeline(settings_for(p.settings.home, NOW, retention_load_dates=1))  # what `run` does
    finish_in_doubt(again)
    prune(again)
    drive(again)
    assert facts(again) == uninterrupted
    assert uninterrupted["prunings"] == [(D1, "COMPLETE"), (D2, "COMPLETE")]
