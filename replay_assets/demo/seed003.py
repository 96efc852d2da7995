"""``replay-assets demo``, seed 003: a failed daily load handled the way the runbook says.

Blocked upstream, a transform that fails once and is retried, the certified partition with its
service levels, a corrupted historical publication found by re-verification and repaired by a
one-partition backfill in the backfill lane, and a replay that changes nothing.
"""

import json
from pathlib import Path
from typing import Any

import dagster as dg

from replay_assets.core.config import config_path, settings_from
from replay_assets.core.lanes import CURRENT, LANE_TAG
from replay_assets.demo.scenarios import seed003
from replay_assets.demo.seeds import Print, controls, snapshot, table
from replay_assets.entrypoints.environment import settings_text
from replay_assets.entrypoints.runner import QUIET
from replay_assets.entrypoints.session import Session
from replay_assets.usecases.operations import Operations
from replay_assets.usecases.status import record_waiting_statuses

STEP_EVENTS = {"STEP_START", "STEP_UP_FOR_RETRY", "STEP_RESTARTED", "STEP_FAILURE", "STEP_SUCCESS"}
PUBLICATIONS_SQL = """SELECT partition_key, version, content_sha256, reason FROM publications
                      WHERE asset = 'current_orders' ORDER BY partition_key, version"""


def session_at(home: Path, now: str, fail_once: str | None = None) -> Session:
    env = {"REPLAY_ASSETS_NOW": now, **({"REPLAY_ASSETS_FAIL_ONCE": fail_once} if fail_once else {})}
    path = config_path(env, str(home))
    settings = settings_from(env, str(home), settings_text(path))
    return Session(settings, home / "dagster")


def step_trace(instance: dg.DagsterInstance, run_id: str, step: str) -> list[str]:
    """The Dagster event log of one step: the retry is visible there."""
    return [
        str(e.event_type_value)
        for e in (r.event_log_entry.dagster_event for r in _records(instance, run_id))
        if e is not None and e.step_key == step and e.event_type_value in STEP_EVENTS
    ]


def _records(instance: dg.DagsterInstance, run_id: str) -> list[dg.EventLogRecord]:
    return list(instance.get_records_for_run(run_id, limit=10_000).records)


def status_of(s: Session, asset: str, key: str) -> dict[str, Any]:
    rows = s.query(
        """SELECT status, reason, last_good_version FROM partition_status
           WHERE asset = ? AND partition_key = ?""",
        [asset, key],
    )
    return rows[0] if rows else {}


def legacy_history(home: Path) -> None:
    """The seed's starting point: 2026-09-20 was published, then its stored record was corrupted
    by something outside this system."""
    seed003.write_config(home)
    s = session_at(home, seed003.LEGACY_CERTIFIED_AT)
    seed003.deliver_baseline(s.settings.landing)
    s.run()
    with s.pipeline.warehouse.transaction() as con:
        seed003.corrupt_legacy_publication(con)
    s.close()


def seed003_demo(home: Path, out: Print) -> dict[str, Any]:
    legacy_history(home)

    s = session_at(home, seed003.BLOCKED_RUN_AT)  # run A: the source is not ready yet
    seed003.deliver_current(s.settings.landing)
    before = s.query(PUBLICATIONS_SQL)
    blocked_runs = len(s.run().runs)
    plan = next(p for p in record_waiting_statuses(s.pipeline).plans if p.load_date == seed003.CURRENT_DATE)
    blocked = {
        "runs": blocked_runs,
        "status": str(plan.status),
        "reason": plan.reason,
        "published_nothing": s.query(PUBLICATIONS_SQL) == before,
    }
    s.close()

    s = session_at(home, seed003.RETRIED_RUN_AT, fail_once="current_state")  # run B
    summary = s.run()
    apply_run = s.instance.get_runs(
        filters=dg.RunsFilter(tags={"replay/requested_by": "source_manifest_sensor"}), limit=1
    )[0]
    ops = Operations(s.pipeline)
    slo = ops.slo(seed003.CURRENT_DATE)
    fed = s.query(
        "SELECT DISTINCT business_date FROM restatement_queue WHERE load_date = ? ORDER BY 1",
        [seed003.CURRENT_DATE],
    )
    daily = {str(r["business_date"]): ops.daily_slo(str(r["business_date"])) for r in fed}
    retried = {
        "runs_ok": [ok for _, _, ok, _ in summary.runs],
        "dagster_trace": step_trace(s.instance, apply_run.run_id, "current_state"),
        "attempts": [a for a in ops.step_attempts(apply_run.run_id) if a[0] == "current_state"],
        "apply_operations": s.query(
            "SELECT state FROM operations WHERE kind = 'apply_load_date' AND partition_key = ?",
            [seed003.CURRENT_DATE],
        ),
        "controls": controls(snapshot(s, seed003.CURRENT_DATE)),
        "slo": slo.to_record() if slo else None,
        "daily_slos": {day: found.to_record() if found else None for day, found in daily.items()},
    }
    s.close()

    s = session_at(home, seed003.REVERIFY_AT)  # re-verification finds the corrupted record
    checks = s.defs.resolve_job_def("reverify_publications_job").execute_in_process(
        run_config=QUIET, instance=s.instance, tags={LANE_TAG: CURRENT}, raise_on_error=False
    )
    evaluations = checks.get_asset_check_evaluations()
    suspect = {
        "checks_passed": {str(e.asset_key.to_user_string()): e.passed for e in evaluations},
        "status": status_of(s, "current_orders", seed003.BASELINE_DATE),
    }
    s.close()

    s = session_at(home, seed003.BACKFILL_AT)  # the smallest repair: one partition, backfill lane
    current_before = _publication(s, seed003.CURRENT_DATE)
    repaired_ok = s.backfill_in_process([seed003.BASELINE_DATE], "repair the corrupted 2026-09-20 record")
    repair = {
        "runs_ok": repaired_ok,
        "controls": controls(snapshot(s, seed003.BASELINE_DATE)),
        "status": status_of(s, "current_orders", seed003.BASELINE_DATE),
        "current_unchanged": _publication(s, seed003.CURRENT_DATE) == current_before,
        "lane": s.instance.get_runs(limit=1)[0].tags.get(LANE_TAG),
    }
    s.close()

    s = session_at(home, seed003.REPLAY_AT)  # run C: the same delivery again, 2026-09-21 replayed
    seed003.deliver_current(s.settings.landing)
    replay_runs = len(s.run().runs)
    replayed = s.defs.resolve_job_def("apply_load_date_job").execute_in_process(
        run_config=QUIET,
        instance=s.instance,
        partition_key=seed003.CURRENT_DATE,
        tags={LANE_TAG: CURRENT},
        raise_on_error=False,
    )
    replay = {
        "redelivery_runs": replay_runs,
        "rematerialized_ok": replayed.success,
        "current_unchanged": _publication(s, seed003.CURRENT_DATE) == current_before,
        "final_controls": controls(snapshot(s, seed003.CURRENT_DATE)),
    }
    update = Operations(s.pipeline).consumer_update(seed003.BASELINE_DATE)
    publications = s.query(PUBLICATIONS_SQL)
    s.close()
    figures = {
        "blocked": blocked,
        "retried": retried,
        "suspect": suspect,
        "repair": repair,
        "replay": replay,
        "publications": publications,
        "update": update,
    }
    _print(out, figures)
    return figures


def _publication(s: Session, key: str) -> list[dict[str, Any]]:
    return s.query(
        """SELECT version, content_sha256 FROM publications
           WHERE asset = 'current_orders' AND partition_key = ?""",
        [key],
    )


def _slo_figures(slo: dict[str, Any]) -> str:
    figures = [
        slo[k] for k in ("freshness_minutes", "completeness_pct", "duration_minutes", "availability_minutes")
    ]
    return f"freshness/completeness/duration/availability {figures} {'met' if slo['all_met'] else 'MISSED'}"


def _print(out: Print, f: dict[str, Any]) -> None:
    b, r, su, rep, rp = f["blocked"], f["retried"], f["suspect"], f["repair"], f["replay"]
    out("seed 003 — a failed daily load, handled by the runbook")
    out(f"  08:05 run A: {b['runs']} runs; 2026-09-21 {b['status']}: {b['reason']}")
    out(f"  08:12 run B: transform trace {' -> '.join(r['dagster_trace'])}")
    out(f"        attempts recorded: {[(a[2], a[3], a[4]) for a in r['attempts']]}")
    out(f"        controls as of 2026-09-21: {r['controls']}")
    out(f"        SLOs: {json.dumps(r['slo'], sort_keys=True)}")
    for day, found in r["daily_slos"].items():
        figures = "-" if found is None else _slo_figures(found)
        out(f"        daily_aggregates {day} (fed by 2026-09-21) SLOs: {figures}")
    out(f"  08:45 re-verification: checks passed {su['checks_passed']}")
    out(f"        2026-09-20 {su['status'].get('status')}: {su['status'].get('reason')}")
    out(
        f"  09:00 backfill of 2026-09-20 in the {rep['lane']} lane: controls {rep['controls']}, "
        f"{rep['status'].get('status')}; 2026-09-21 publication unchanged {rep['current_unchanged']}"
    )
    out(
        f"  09:10 replay: {rp['redelivery_runs']} runs for the same delivery; 2026-09-21 re-materialized, "
        f"publication unchanged {rp['current_unchanged']}; controls {rp['final_controls']}"
    )
    table(out, "current_orders publications", f["publications"])
    out("  consumer update for 2026-09-20:")
    for line in f["update"]:
        out(f"    {line}")
