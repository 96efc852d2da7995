"""``replay-assets backfill``: a real Dagster backfill in the backfill lane, with an operator note.

The backfill is launched with Dagster's own ``dagster job backfill`` (so it is on the UI's
backfills page and its runs carry ``dagster/backfill``); every run is tagged
``replay/lane=backfill``. With ``--wait`` and no daemon running, a daemon is started for the
duration so the queued runs are dequeued and launched under the instance's lane limits.
"""

import json
import os
import re
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import dagster as dg

from replay_assets.core.errors import ErrorCode, ReplayError
from replay_assets.entrypoints.runner import HEARTBEAT_FRESH_SECONDS
from replay_assets.entrypoints.session import Session
from replay_assets.usecases.backfill_note import record_backfill

JOB_OF_ASSET = {
    "raw_receipts": "apply_load_date_job",
    "current_orders": "apply_load_date_job",
    "current_customers": "apply_load_date_job",
    "daily_aggregates": "restate_aggregates_job",
}
LOAD_DATE_ASSETS = frozenset(a for a, job in JOB_OF_ASSET.items() if job == "apply_load_date_job")
DONE = {dg.DagsterRunStatus.SUCCESS, dg.DagsterRunStatus.FAILURE, dg.DagsterRunStatus.CANCELED}
POLL_SECONDS = 1.0


@dataclass(frozen=True)
class BackfillOutcome:
    backfill_id: str
    runs: dict[str, str]  # partition -> final run status (when waited for)


def _folder(path: Path) -> str:
    """A path as a child process started in the instance folder reads it: absolute, so a
    relative home (the default ``data``) names the same folder there."""
    return str(path.resolve())


def _env(session: Session) -> dict[str, str]:
    env = {
        **os.environ,
        "REPLAY_ASSETS_HOME": _folder(session.settings.home),
        "DAGSTER_HOME": _folder(session.dagster_home),
    }
    if session.settings.fixed_now:
        env["REPLAY_ASSETS_NOW"] = session.settings.fixed_now.isoformat()
    return env


def launch(session: Session, asset: str, first: str, last: str, note: str, operator: str) -> str:
    """Launch the backfill; returns its id. The operator note is recorded in the warehouse."""
    if asset not in JOB_OF_ASSET:
        raise ReplayError(ErrorCode.USAGE, f"unknown asset {asset}; one of {', '.join(JOB_OF_ASSET)}")
    _ = session.instance  # creates $DAGSTER_HOME with the project's dagster.yaml when absent
    tags = json.dumps({"replay/lane": "backfill", "replay/operator": operator})
    cmd = [
        str(Path(sys.executable).with_name("dagster")),
        "job",
        "backfill",
        "-w",
        _folder(session.dagster_home / "workspace.yaml"),
        "-j",
        JOB_OF_ASSET[asset],
        "--from",
        first,
        "--to",
        last,
        "--tags",
        tags,
        "--noprompt",
    ]
    done = subprocess.run(
        cmd, cwd=_folder(session.dagster_home), env=_env(session), capture_output=True, text=True, check=False
    )
    found = re.search(r"Launched backfill job `([^`]+)`", done.stdout + done.stderr)
    if done.returncode != 0 or not found:
        raise ReplayError(
            ErrorCode.NOT_READY, f"dagster job backfill failed: {(done.stderr or done.stdout)[-500:]}"
        )
    record_backfill(
        session.pipeline, found.group(1), asset=asset, first=first, last=last, note=note, operator=operator
    )
    return found.group(1)


def wait(
    session: Session, backfill_id: str, progress: Callable[[str], None], timeout: float = 3600
) -> BackfillOutcome:
    """Wait for every run of the backfill; start a daemon for the duration if none is running."""
    instance = session.instance
    daemon = None if _daemon_fresh(instance) else _start_daemon(session)
    try:
        deadline = time.monotonic() + timeout
        seen = ""
        while time.monotonic() < deadline:
            runs = instance.get_runs(filters=dg.RunsFilter(tags={"dagster/backfill": backfill_id}))
            tally = ", ".join(
                f"{n} {status.lower()}" for status, n in sorted(Counter(r.status.value for r in runs).items())
            )
            if tally and tally != seen:
                progress(f"backfill {backfill_id}: {tally}")
                seen = tally
            if runs and all(r.status in DONE for r in runs):
                outcome = {r.tags.get("dagster/partition", "?"): r.status.value for r in runs}
                for key in sorted(outcome):
                    progress(f"backfill {backfill_id} {key}: {outcome[key]}")
                return BackfillOutcome(backfill_id, outcome)
            time.sleep(POLL_SECONDS)  # waiting on other processes: polling is the only signal
        raise ReplayError(ErrorCode.NOT_READY, f"backfill {backfill_id} did not finish in {timeout:g} s")
    finally:
        if daemon is not None:
            daemon.terminate()
            daemon.wait(timeout=60)
            instance.wipe_daemon_heartbeats()


def _daemon_fresh(instance: dg.DagsterInstance) -> bool:
    now = time.time()
    return any(
        now - beat.timestamp < HEARTBEAT_FRESH_SECONDS for beat in instance.get_daemon_heartbeats().values()
    )


def _start_daemon(session: Session) -> subprocess.Popen[bytes]:
    cmd = [
        str(Path(sys.executable).with_name("dagster-daemon")),
        "run",
        "-w",
        _folder(session.dagster_home / "workspace.yaml"),
    ]
    # the daemon writes through its own copy of the descriptor; this process closes its copy now
    with open(session.dagster_home / "daemon.log", "ab") as log:
        return subprocess.Popen(
            cmd, cwd=_folder(session.dagster_home), env=_env(session), stdout=log, stderr=subprocess.STDOUT
        )
