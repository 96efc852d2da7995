"""docs/runbook.md is executable: its commands, in order, handle the seed-003 incident (a corrupted
historical publication found after the current load was retried), and its late-delivery block
applies a correction for a sealed load date."""

import os
import re
import subprocess
import sys
from pathlib import Path

import dagster as dg

from replay_assets.demo.scenarios import seed003
from replay_assets.demo.seed003 import legacy_history, session_at
from replay_assets.usecases.context import Pipeline
from replay_assets_tests.storage.test_bad_input import D1, D2, D3, NOW
from replay_assets_tests.storage.test_late_delivery import _everything, late_scenario

PROJECT = Path(__file__).resolve().parents[1]
RUNBOOK = PROJECT / "docs" / "runbook.md"
STEPS = [
    "Contain",
    "Preserve evidence",
    "Classify",
    "Smallest repair",
    "Replay",
    "Reconcile",
    "Certify",
    "Communicate",
    "Prevent",
]
# the exit code each step's commands end with on this incident (classify finds the SUSPECT record)
EXPECTED_EXIT = {"Classify": 1}


def runbook_commands() -> list[tuple[str, list[str]]]:
    """(step title, its shell commands) from the runbook's numbered sections, in order."""
    sections = re.split(r"^## \d+\. ", RUNBOOK.read_text(encoding="utf-8"), flags=re.M)[1:]
    steps = []
    for section in sections:
        title = section.splitlines()[0].strip()
        blocks = re.findall(r"```sh\n(.*?)```", section, flags=re.S)
        steps.append((title, [line for block in blocks for line in block.splitlines() if line.strip()]))
    return steps


def incident(home: Path) -> list[dict[str, object]]:
    """2026-09-20 published then corrupted; 2026-09-21 certified after a retried transform."""
    legacy_history(home)
    s = session_at(home, seed003.RETRIED_RUN_AT, fail_once="current_state")
    seed003.deliver_current(s.settings.landing)
    assert not s.run().failed
    current = s.query(
        "SELECT content_sha256 FROM publications WHERE partition_key = ? ORDER BY ALL", ["2026-09-21"]
    )
    s.close()
    return current


def test_the_runbook_names_a_command_for_every_step() -> None:
    steps = runbook_commands()
    assert [title for title, _ in steps] == STEPS
    assert all(commands for _, commands in steps)


def test_the_runbook_commands_repair_the_seed_003_incident(tmp_path: Path) -> None:
    home = tmp_path / "home"
    current_before = incident(home)
    workdir = tmp_path / "oncall"
    workdir.mkdir()
    env = {  # the home alone (and the incident's clock): no DAGSTER_HOME
        **{k: v for k, v in os.environ.items() if not k.startswith(("REPLAY_ASSETS_", "DAGSTER_"))},
        "REPLAY_ASSETS_HOME": str(home),
        "REPLAY_ASSETS_NOW": seed003.BACKFILL_AT,
    }
    bin_dir = str(Path(sys.executable).parent)
    outputs: dict[str, str] = {}
    for title, commands in runbook_commands():
        codes = []
        for command in commands:
            line = command.replace("uv run ", f"{bin_dir}/").replace(
                "workspace.yaml", str(PROJECT / "workspace.yaml")
            )
            done = subprocess.run(
                ["bash", "-c", line], cwd=workdir, env=env, capture_output=True, text=True, check=False
            )
            codes.append(done.returncode)
            outputs[title] = outputs.get(title, "") + done.stdout
            assert done.returncode in (0, EXPECTED_EXIT.get(title, 0)), (
                f"{title}: {command}\n{done.stderr[-2000:]}"
            )
        assert codes[-1] == EXPECTED_EXIT.get(title, 0), title
    assert "Stopped sensor source_manifest_sensor" in outputs["Contain"]
    recorded = instigator_statuses(home)
    assert {
        name: recorded.get(name) for name in ("source_manifest_sensor", "reverify_publications_job_schedule")
    } == {
        "source_manifest_sensor": "RUNNING",  # stopped in step 1, started in step 9
        "reverify_publications_job_schedule": "RUNNING",
    }
    assert "current_orders: 2 publications re-verified, 1 SUSPECT" in outputs["Classify"]
    assert "2026-09-20: stored controls (8, 5, 10, 690, 435, 255)" in outputs["Classify"]
    assert "0 SUSPECT" in outputs["Reconcile"] and "SUSPECT" not in outputs["Reconcile"].replace(
        "0 SUSPECT", ""
    )
    assert "current_orders 2026-09-20: RESTATED" in outputs["Communicate"]
    assert {p.name for p in (workdir / "evidence").iterdir()} == {
        "publications.jsonl",
        "reconciliation.csv",
        "partition_status.csv",
    }
    s = session_at(home, seed003.REPLAY_AT)
    snapshot = s.query("""SELECT active_lines, distinct_orders, units, amount_minor, cost_minor,
                          gross_profit_minor FROM snapshots WHERE load_date = '2026-09-20'""")
    assert tuple(snapshot[0].values()) == (8, 5, 10, 690, 425, 265)
    current = s.query(
        "SELECT content_sha256 FROM publications WHERE partition_key = ? ORDER BY ALL", ["2026-09-21"]
    )
    assert current == current_before  # the repair of 2026-09-20 left 2026-09-21 alone
    note = s.query("SELECT asset, from_partition, to_partition, lane, note FROM backfills")
    assert note == [
        {
            "asset": "current_orders",
            "from_partition": "2026-09-20",
            "to_partition": "2026-09-20",
            "lane": "backfill",
            "note": "republish the corrupted 2026-09-20 record from raw",
        }
    ]
    s.close()


def instigator_statuses(home: Path) -> dict[str, str]:
    """The sensor and schedule states the runbook's Dagster commands recorded on the home's own
    instance."""
    with dg.DagsterInstance.from_config(str(home / "dagster")) as instance:
        return {state.name: state.status.value for state in instance.all_instigator_state()}


def late_delivery_commands() -> list[str]:
    """The runbook's late-delivery block (step 4), with its ``$LATE_DATE`` and ``$LATEST``."""
    blocks = re.findall(r"```sh late-delivery\n(.*?)```", RUNBOOK.read_text(encoding="utf-8"), flags=re.S)
    assert len(blocks) == 1
    return [line for line in blocks[0].splitlines() if line.strip()]


def test_the_runbook_late_delivery_step_equals_the_batch_on_time(tmp_path: Path) -> None:
    """A correction for a sealed load date, applied by the runbook's commands through a real
    Dagster backfill in the backfill lane: the result equals the correction delivered on time."""
    on_time = late_scenario(tmp_path / "on-time", on_time=True)
    late = late_scenario(tmp_path / "late", on_time=False)
    home = late.settings.home
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("REPLAY_ASSETS_", "DAGSTER_"))},
        "REPLAY_ASSETS_HOME": str(home),
        "DAGSTER_HOME": str(home / "dagster"),
        "REPLAY_ASSETS_NOW": NOW,
        "LATE_DATE": D2,
        "LATEST": D3,
    }
    bin_dir = str(Path(sys.executable).parent)
    for command in late_delivery_commands():
        done = subprocess.run(
            ["bash", "-c", command.replace("uv run ", f"{bin_dir}/")],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode == 0, f"{command}\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
    dates = [D1, D2, D3]
    assert _everything(Pipeline(late.settings), dates) == _everything(on_time, dates)
