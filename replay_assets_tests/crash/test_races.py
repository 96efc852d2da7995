"""Two processes executing the same operation at once: exactly one mutation, both see its result."""

import json
import subprocess
import sys
from pathlib import Path

from replay_assets.demo.scenarios import seed001
from replay_assets.usecases.context import Pipeline
from replay_assets.usecases.land import land
from replay_assets_tests.helpers import drive, settings_for

APPLY = """
import json, sys
from pathlib import Path
from replay_assets.core.config import Settings
from replay_assets.core.manifest import parse_instant
from replay_assets.usecases.context import Pipeline
from replay_assets.usecases.apply import apply
p = Pipeline(Settings(home=Path(sys.argv[1]), fixed_now=parse_instant(sys.argv[2], "now")))
print(json.dumps({"status": apply(p, sys.argv[3], None).status.value}))
"""


def test_the_same_operation_in_two_processes_mutates_once(tmp_path: Path) -> None:
    pipeline = Pipeline(settings_for(tmp_path, seed001.NOW))
    seed001.deliver_baseline(pipeline.settings.landing)
    drive(pipeline)
    seed001.deliver_cdc(pipeline.settings.landing, "B20260921-CDC-A", "2026-09-21", "2026-09-21T08:12:00Z")
    land(pipeline, "2026-09-21")
    args = [sys.executable, "-c", APPLY, str(tmp_path), seed001.NOW, "2026-09-21"]
    children = [subprocess.Popen(args, stdout=subprocess.PIPE, text=True) for _ in range(2)]
    outputs = [json.loads(child.communicate(timeout=120)[0]) for child in children]
    assert [c.returncode for c in children] == [0, 0]
    assert outputs == [{"status": "APPLIED"}, {"status": "APPLIED"}]
    with pipeline.warehouse.connect() as con:
        assert con.execute("""SELECT count(*) FROM commit_markers m JOIN operations o USING (operation_id)
                              WHERE o.partition_key = '2026-09-21'""").fetchall() == [(1,)]
        assert con.execute("""SELECT count(*) FROM publications WHERE asset = 'current_orders'
                              AND partition_key = '2026-09-21'""").fetchall() == [(1,)]
        assert con.execute(
            "SELECT count(*) FROM order_history WHERE load_date = '2026-09-21'"
        ).fetchall() == [(5,)]
