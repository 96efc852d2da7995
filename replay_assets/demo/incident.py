"""The sample's incident, played against the running UI (``replay-assets ui`` on an empty home).

Seed 003's story on the sample's week: once the daemon's sensors have applied every delivered
load date and restated its business dates, something outside this system corrupts the stored
record of one load date (its cost and gross profit). The re-verification job, launched through
the webserver as an operator would from the UI, finds it (its check fails); a real Dagster
backfill of that one partition in the backfill lane, launched by ``backfill.launch`` with an
operator note, repairs it; the re-verification runs again and passes. Every run is launched
through Dagster (sensor ticks, the GraphQL API, a backfill), so the UI's record of it is true.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import dagster as dg
from dagster_graphql import DagsterGraphQLClient

from replay_assets.core.lanes import CURRENT, LANE_TAG
from replay_assets.demo.sample import Sample
from replay_assets.entrypoints import backfill
from replay_assets.entrypoints.session import Session

REVERIFY_JOB = "reverify_publications_job"
OPERATOR = "replay-assets ui (sample)"
ACTIVE = {
    dg.DagsterRunStatus.QUEUED,
    dg.DagsterRunStatus.NOT_STARTED,
    dg.DagsterRunStatus.STARTING,
    dg.DagsterRunStatus.STARTED,
    dg.DagsterRunStatus.CANCELING,
}
DONE = {dg.DagsterRunStatus.SUCCESS, dg.DagsterRunStatus.FAILURE, dg.DagsterRunStatus.CANCELED}
FINISHED_BACKFILL = {"COMPLETED", "COMPLETED_SUCCESS", "COMPLETED_FAILED", "FAILED", "CANCELED"}
POLL_SECONDS = 1.0
Say = Callable[[str], None]


def repair_note(day: str) -> str:
    return f"repair the corrupted publication record of load date {day} found by re-verification"


def play_incident(session: Session, sample: Sample, port: int, say: Say, timeout: float = 900) -> None:
    """Wait for the sensors to apply the sample, then corrupt, re-verify, repair and re-verify.
    Polls the instance (the daemon's runs are other processes: polling is the only signal)."""
    deadline = time.monotonic() + timeout
    instance = session.instance
    _wait(lambda: _settled(instance, sample), deadline, "the sensors to apply the sample's week")
    say(f"sample: the sensors applied load dates {sample.load_dates[0]}..{sample.load_dates[-1]}")
    corrupt_record(session, sample.incident_date)
    say(f"sample: the stored record of {sample.incident_date} was corrupted (the incident)")
    client = DagsterGraphQLClient("127.0.0.1", port_number=port)
    outcome = _reverify(client, instance, deadline)
    say(f"sample: re-verification {outcome}")
    if "current_orders failed" not in outcome:
        raise RuntimeError("the re-verification did not find the corrupted record")
    day = sample.incident_date
    backfill_id = backfill.launch(
        session, "current_orders", day, day, note=repair_note(day), operator=OPERATOR
    )
    say(f"sample: backfill {backfill_id} of current_orders {day} launched to repair it")
    _wait(lambda: _backfill_done(instance, backfill_id), deadline, f"backfill {backfill_id}")
    outcome = _reverify(client, instance, deadline)
    say(f"sample: re-verification {outcome}")
    if "current_orders passed" not in outcome:
        raise RuntimeError(f"the re-verification after backfill {backfill_id} did not pass")
    say("sample: the incident is repaired")


def corrupt_record(session: Session, day: str) -> None:
    """The outside actor of seed 003: one load date's stored snapshot record gets a wrong cost
    (ten more) and gross profit (ten less), as a run outside this system once wrote it."""
    with session.pipeline.warehouse.transaction() as con:
        con.execute(
            """UPDATE snapshots SET cost_minor = cost_minor + 10, gross_profit_minor = gross_profit_minor - 10
               WHERE load_date = ?""",
            [day],
        )


def _reverify(client: DagsterGraphQLClient, instance: dg.DagsterInstance, deadline: float) -> str:
    """Launch the re-verification job and wait for it; says what its checks found."""
    run_id = client.submit_job_execution(REVERIFY_JOB, tags={LANE_TAG: CURRENT, "replay/operator": OPERATOR})
    _wait(lambda: _finished(instance, run_id), deadline, f"re-verification run {run_id}")
    found = []
    for entry in instance.all_logs(run_id, of_type=dg.DagsterEventType.ASSET_CHECK_EVALUATION):
        evaluation = entry.dagster_event.event_specific_data if entry.dagster_event else None
        if isinstance(evaluation, dg.AssetCheckEvaluation):
            outcome = "passed" if evaluation.passed else "failed"
            found.append(f"{evaluation.asset_key.to_user_string()} {outcome}")
    return f"run {run_id}: {', '.join(sorted(found)) or 'no check evaluated'}"


def _settled(instance: dg.DagsterInstance, sample: Sample) -> bool:
    """Every load date and business date of the sample materialized, and no run in flight."""
    loads = instance.get_materialized_partitions(dg.AssetKey("current_orders"))
    days = instance.get_materialized_partitions(dg.AssetKey("daily_aggregates"))
    if not (set(sample.load_dates) <= loads and set(sample.business_dates) <= days):
        return False
    return not instance.get_runs(filters=dg.RunsFilter(statuses=list(ACTIVE)), limit=1)


def _finished(instance: dg.DagsterInstance, run_id: str) -> bool:
    run = instance.get_run_by_id(run_id)
    return run is not None and run.status in DONE


def _backfill_done(instance: dg.DagsterInstance, backfill_id: str) -> bool:
    """The backfill's own status, not its runs': an asset backfill creates a partition's next
    run only after the previous one ended, so every run done is not yet the backfill done."""
    found = instance.get_backfill(backfill_id)
    return found is not None and found.status.value in FINISHED_BACKFILL


def _wait(probe: Callable[[], bool], deadline: float, what: str) -> None:
    while not probe():
        if time.monotonic() >= deadline:
            raise TimeoutError(f"gave up waiting for {what}")
        time.sleep(POLL_SECONDS)
