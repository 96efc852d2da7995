"""``replay-assets backfill``: a real Dagster asset backfill in the backfill lane, with an operator note.

The backfill is added to the instance the way the UI's backfill dialog adds one (an asset backfill
over the asset's partition range), so it is listed on the Backfills page with the operator's note
as its title and description (and its first line in the tag the UI shows), and the daemon's
backfill loop launches its runs, each tagged ``dagster/backfill`` and ``replay/lane=backfill``.
With ``--wait`` and no daemon running, a daemon is started for the duration; once the
backfill's runs have ended, the restatements they queued are executed too (in this process, as
the CLI's runs, when the daemon was this command's own), so nothing is left pending.
"""

import os
import re
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import dagster as dg
from dagster._core.definitions.selector import (
    PartitionRangeSelector,
    PartitionsByAssetSelector,
    PartitionsSelector,
)
from dagster._core.execution.backfill import (
    BULK_ACTION_TERMINAL_STATUSES,
    BulkActionStatus,
    PartitionBackfill,
)
from dagster._core.utils import make_new_backfill_id
from dagster._time import get_current_timestamp

from replay_assets.core.errors import ErrorCode, ReplayError
from replay_assets.core.lanes import BACKFILL, LANE_TAG
from replay_assets.entrypoints.idle_run import RunSummary, exclusive_run
from replay_assets.entrypoints.runner import HEARTBEAT_FRESH_SECONDS, USER_TAG, refuse_if_daemon, run_pending
from replay_assets.entrypoints.session import Session
from replay_assets.usecases.backfill_note import record_backfill
from replay_assets.usecases.publish import pending_restatements

LOAD_DATE_SELECTION = ("raw_receipts", "current_orders", "current_customers")  # landed and applied together
# what a backfill of each asset materializes: a load date is landed and applied as one unit
SELECTION_OF_ASSET = {
    **{asset: LOAD_DATE_SELECTION for asset in LOAD_DATE_SELECTION},
    "daily_aggregates": ("daily_aggregates",),
}
LOAD_DATE_ASSETS = frozenset(LOAD_DATE_SELECTION)
OPERATOR_TAG = "replay/operator"
NOTE_TAG = "replay/note"  # the UI shows a backfill's tags, never its title or description
ACTIVE = [dg.DagsterRunStatus.QUEUED, dg.DagsterRunStatus.STARTING, dg.DagsterRunStatus.STARTED]
POLL_SECONDS = 1.0
TITLE_LENGTH = 100  # Dagster's longest backfill title
TITLE_REFUSED = re.compile(r'[%*"]')  # characters Dagster refuses in a title


@dataclass(frozen=True)
class BackfillOutcome:
    backfill_id: str
    status: str  # the backfill's final status (BulkActionStatus)
    runs: dict[str, str]  # partition (or first..last) and assets of each run -> its final status
    restatements: RunSummary | None = None  # the queued restatements this command executed

    @property
    def ok(self) -> bool:
        return self.status == BulkActionStatus.COMPLETED_SUCCESS.value and all(
            status == "SUCCESS" for status in self.runs.values()
        )


@dataclass(frozen=True)
class Deadline:
    """One time budget for everything ``wait`` waits on."""

    seconds: float
    start: float = field(default_factory=time.monotonic)

    def passed(self) -> bool:
        return time.monotonic() >= self.start + self.seconds


def title_of(note: str) -> str:
    """The note's first line as a backfill title: Dagster refuses some characters and long titles."""
    line = TITLE_REFUSED.sub("'", (note.strip().splitlines() or [""])[0]).strip()
    return line if len(line) <= TITLE_LENGTH else line[: TITLE_LENGTH - 1] + "…"


def launch(session: Session, asset: str, first: str, last: str, note: str, operator: str) -> str:
    """Add an asset backfill of ``first..last`` to the instance; returns its id. The daemon's
    backfill loop launches its runs. The operator note is recorded in the warehouse too."""
    if asset not in SELECTION_OF_ASSET:
        raise ReplayError(ErrorCode.USAGE, f"unknown asset {asset}; one of {', '.join(SELECTION_OF_ASSET)}")
    graph = session.defs.resolve_asset_graph()
    partitions = graph.get(dg.AssetKey(asset)).partitions_def
    assert partitions is not None  # every asset of the project is partitioned
    try:
        names = partitions.get_partition_keys_in_range(dg.PartitionKeyRange(first, last))
    except dg.DagsterInvalidInvocationError as error:
        refusal = f"{asset}: {first}..{last} is not a partition range: {error}"
        raise ReplayError(ErrorCode.USAGE, refusal) from None
    instance = session.instance
    span = PartitionsSelector(ranges=[PartitionRangeSelector(start=names[0], end=names[-1])])
    # each asset's own range, as the UI's dialog sends it: Dagster would otherwise add the
    # partitions downstream of the range through the day-before dependency
    backfill = PartitionBackfill.from_partitions_by_assets(
        backfill_id=make_new_backfill_id(),
        asset_graph=graph,
        backfill_timestamp=get_current_timestamp(),
        tags={LANE_TAG: BACKFILL, OPERATOR_TAG: operator, USER_TAG: operator, NOTE_TAG: title_of(note)},
        dynamic_partitions_store=instance,
        partitions_by_assets=[
            PartitionsByAssetSelector(asset_key=dg.AssetKey(key), partitions=span)
            for key in SELECTION_OF_ASSET[asset]
        ],
        title=title_of(note) or None,
        description=note,
        run_config=None,
    )
    instance.add_backfill(backfill)
    record = {"asset": asset, "first": first, "last": last, "note": note, "operator": operator}
    backfill_id: str = backfill.backfill_id
    record_backfill(session.pipeline, backfill_id, **record)
    return backfill_id


def wait(
    session: Session, backfill_id: str, progress: Callable[[str], None], timeout: float = 3600
) -> BackfillOutcome:
    """Wait for the backfill and its runs, then for the restatements they queued: executed here
    when the daemon is this command's own (started for the duration), else left to the running
    daemon's restatement sensor and waited for."""
    instance = session.instance
    deadline = Deadline(timeout)
    daemon = None if _daemon_fresh(instance) else _start_daemon(session)
    try:
        outcome = _until_done(instance, backfill_id, progress, deadline)
        if daemon is None:  # the running daemon's restatement sensor executes what they queued
            _until(lambda: _drained(session), deadline, f"the restatements of backfill {backfill_id}")
            return outcome
        _until(lambda: not instance.get_runs(dg.RunsFilter(statuses=ACTIVE)), deadline, "the daemon's runs")
    finally:
        if daemon is not None:
            daemon.terminate()
            daemon.wait(timeout=60)
            instance.wipe_daemon_heartbeats()
    with exclusive_run(session.settings.home):
        refuse_if_daemon(instance)
        summary = run_pending(
            session.defs, instance, session.pipeline, progress, sensors=("restatement_sensor",)
        )
    return BackfillOutcome(outcome.backfill_id, outcome.status, outcome.runs, summary)


def _until_done(
    instance: dg.DagsterInstance, backfill_id: str, progress: Callable[[str], None], deadline: Deadline
) -> BackfillOutcome:
    seen = ""
    while not deadline.passed():
        backfill = instance.get_backfill(backfill_id)
        runs = instance.get_runs(filters=dg.RunsFilter(tags={"dagster/backfill": backfill_id}))
        counts = sorted(Counter(r.status.value for r in runs).items())
        tally = ", ".join(f"{n} {status.lower()}" for status, n in counts)
        if tally and tally != seen:
            progress(f"backfill {backfill_id}: {tally}")
            seen = tally
        if backfill is not None and backfill.status in BULK_ACTION_TERMINAL_STATUSES:
            outcome = {_label(r): r.status.value for r in runs}
            for key in sorted(outcome):
                progress(f"backfill {backfill_id} {key}: {outcome[key]}")
            progress(f"backfill {backfill_id}: {backfill.status.value}")
            return BackfillOutcome(backfill_id, backfill.status.value, outcome)
        time.sleep(POLL_SECONDS)  # waiting on other processes: polling is the only signal
    raise ReplayError(ErrorCode.NOT_READY, f"backfill {backfill_id} did not finish in {deadline.seconds:g} s")


def _label(run: dg.DagsterRun) -> str:
    """The run's partition (or first..last of a range run) and the assets it materialized: an
    asset backfill may land a load date and apply it in two runs."""
    tags = run.tags
    start, end = (tags.get(f"dagster/asset_partition_range_{edge}") for edge in ("start", "end"))
    where = tags.get("dagster/partition") or (f"{start}..{end}" if start and end else "?")
    assets = sorted(key.to_user_string() for key in run.asset_selection or ())
    return f"{where} {'+'.join(assets)}".strip()


def _until(condition: Callable[[], bool], deadline: Deadline, what: str) -> None:
    while not deadline.passed():
        if condition():
            return
        time.sleep(POLL_SECONDS)  # waiting on other processes: polling is the only signal
    raise ReplayError(ErrorCode.NOT_READY, f"{what} did not finish in {deadline.seconds:g} s")


def _drained(session: Session) -> bool:
    """No restatement queued (a run holding the warehouse means: ask again)."""
    try:
        ranges, _ = pending_restatements(session.pipeline, timeout=0)
    except ReplayError as error:
        if error.code is ErrorCode.WAREHOUSE_BUSY:
            return False
        raise
    return not ranges


def _daemon_fresh(instance: dg.DagsterInstance) -> bool:
    now = time.time()
    return any(
        now - beat.timestamp < HEARTBEAT_FRESH_SECONDS for beat in instance.get_daemon_heartbeats().values()
    )


def _folder(path: Path) -> str:
    """A path as the daemon, started in the instance folder, reads it: absolute, so a relative
    home (the default ``data``) names the same folder there."""
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
