"""``replay-assets demo``: each seed scenario in its own home, through the Dagster definitions.

Every function returns the figures it printed, so tests assert exactly what a person sees.
"""

from collections.abc import Callable
from pathlib import Path
from typing import Any

from replay_assets.core.config import Settings
from replay_assets.core.manifest import parse_instant
from replay_assets.demo.scenarios import fixture, seed000, seed001, seed002
from replay_assets.entrypoints.session import Session
from replay_assets.usecases.decide import decide
from replay_assets.usecases.land import land
from replay_assets.usecases.resolve import resolve

Print = Callable[[str], None]
ORDERS_SQL = """SELECT order_id, version AS source_version, status, store_id,
    CAST(business_date AS VARCHAR) AS business_date, amount_minor FROM current_orders ORDER BY order_id"""
DAILY_SQL = """SELECT store_id, CAST(business_date AS VARCHAR) AS business_date, order_count, amount_minor
    FROM daily_aggregates ORDER BY store_id, business_date"""


def session_for(home: Path, now: str) -> Session:
    settings = Settings(home=home, fixed_now=parse_instant(now, "now"))
    return Session(settings, home / "dagster")


def table(out: Print, title: str, rows: list[dict[str, Any]]) -> None:
    out(f"  {title}")
    if not rows:
        out("    (no rows)")
        return
    cols = list(rows[0])
    widths = [max(len(c), *(len(str(r[c])) for r in rows)) for c in cols]
    out("    " + "  ".join(c.ljust(w) for c, w in zip(cols, widths, strict=True)))
    for r in rows:
        out("    " + "  ".join(str(r[c]).ljust(w) for c, w in zip(cols, widths, strict=True)))


def snapshot(s: Session, load_date: str) -> dict[str, Any]:
    rows = s.query("SELECT * FROM snapshots WHERE load_date = ?", [load_date])
    return rows[0] if rows else {}


def controls(snap: dict[str, Any]) -> tuple[int, ...]:
    keys = ("active_lines", "distinct_orders", "units", "amount_minor", "cost_minor", "gross_profit_minor")
    return tuple(int(snap[k]) for k in keys)


def watermark(s: Session) -> int:
    rows = s.query("SELECT watermark FROM watermarks")
    return int(rows[0]["watermark"]) if rows else 0


def seed000_demo(home: Path, out: Print) -> dict[str, Any]:
    """Three batches, the last replayed; a kill between the state commit and the aggregate
    repair leaves the old groups queued, and the next run repairs them."""
    s = session_for(home, seed000.NOW)
    landing = s.settings.landing
    seed000.deliver(landing, "initial")
    s.run()
    seed000.deliver(landing, "corrections")
    killed = s.run_in_subprocess(fail_point="state.after_commit")
    queued = s.query("""SELECT business_date, store_id FROM restatement_queue
                        WHERE released_at IS NULL ORDER BY 1, 2""")
    s.run()
    seed000.deliver(landing, "late")
    s.run()
    before = s.query("SELECT count(*) AS n FROM publications")[0]["n"]
    seed000.deliver(landing, "late")  # the replay: the same manifest again
    replay_runs = len(s.run().runs)
    after = s.query("SELECT count(*) AS n FROM publications")[0]["n"]
    orders, daily = s.query(ORDERS_SQL), s.query(DAILY_SQL)
    expected = fixture("seed000_expected_final.json")
    out("seed 000 — repair daily reports after corrected orders")
    out(
        f"  killed after the state commit (exit {killed}); groups left queued: "
        + ", ".join(f"{q['store_id']}/{q['business_date']}" for q in queued)
    )
    table(out, "current_orders", orders)
    table(out, "daily_aggregates", daily)
    out(f"  replay of the last batch: {replay_runs} runs, publications {before} -> {after}")
    matches = orders == expected["orders"] and daily == expected["daily"]
    out(f"  equals the seed's independent rebuild: {matches}")
    s.close()
    return {
        "orders": orders,
        "daily": daily,
        "killed_exit": killed,
        "queued": queued,
        "replay_runs": replay_runs,
        "publications": (before, after),
    }


def seed001_demo(home: Path, out: Print) -> dict[str, Any]:
    """Baseline, a crash inside the CDC load, the load, a replay, a schema-version-2 batch."""
    s = session_for(home, seed001.NOW)
    landing = s.settings.landing
    seed001.deliver_baseline(landing)
    s.run()
    base = snapshot(s, seed001.BASELINE_DATE)
    base_wm = watermark(s)
    seed001.deliver_cdc(landing, "B20260921-CDC-A", seed001.CDC_DATE, "2026-09-21T08:12:00Z")
    crashed = s.run_in_subprocess(fail_point="apply.before_commit")
    after_crash = (s.query("SELECT max(load_date) AS d FROM load_dates")[0]["d"], watermark(s))
    s.run()
    final = snapshot(s, seed001.CDC_DATE)
    recon = s.query("""SELECT source_events, accepted, rejected, skipped_duplicate, skipped_stale
                       FROM reconciliation WHERE batch_id = 'B20260921-CDC-A'""")[0]
    customer = s.query("SELECT segment, version FROM current_customers WHERE customer_id = 'C002'")[0]
    tombstones = s.query("SELECT order_id, line_no, version FROM current_orders WHERE status = 'deleted'")
    seed001.deliver_cdc(landing, "B20260922-CDC-C", "2026-09-22", "2026-09-22T08:12:00Z")
    s.run()
    rerun = snapshot(s, "2026-09-22")
    seed001.deliver_breaking(landing, "2026-09-23")
    blocked_summary = s.run()
    blocked = s.query("SELECT status, reason FROM partition_status WHERE partition_key = '2026-09-23'")
    wm_blocked = watermark(s)
    resolve(s.pipeline, "B20260923-CDC-D", "schema v2 is not supported yet; skipped by the demo", "demo")
    s.run()
    resolved = snapshot(s, "2026-09-23")
    s.close()
    shuffled = _shuffled_final_hash(home.parent / f"{home.name}-shuffled")
    figures = {
        "baseline_controls": controls(base),
        "baseline_watermark": base_wm,
        "crash_exit": crashed,
        "after_crash": after_crash,
        "final_controls": controls(final),
        "final_watermark": wm_blocked,
        "reconciliation": recon,
        "customer": customer,
        "tombstones": tombstones,
        "final_sha256": final["content_sha256"],
        "baseline_sha256": base["content_sha256"],
        "rerun_sha256": rerun["content_sha256"],
        "blocked": blocked,
        "blocked_runs_failed": len(blocked_summary.failed),
        "resolved_sha256": resolved.get("content_sha256"),
        "shuffled_sha256": shuffled,
    }
    _print_seed001(out, figures)
    return figures


def _shuffled_final_hash(home: Path) -> str:
    s = session_for(home, seed001.NOW)
    seed001.deliver_baseline(s.settings.landing)
    seed001.deliver_shuffled(s.settings.landing, seed=7)
    s.run()
    digest = str(snapshot(s, "2026-09-23")["content_sha256"])
    s.close()
    return digest


def _print_seed001(out: Print, f: dict[str, Any]) -> None:
    out("seed 001 — incremental CDC")
    out(f"  baseline controls {f['baseline_controls']} watermark {f['baseline_watermark']}")
    out(
        f"  crash inside the load (exit {f['crash_exit']}): latest applied load date "
        f"{f['after_crash'][0]}, watermark {f['after_crash'][1]}"
    )
    out(f"  final controls {f['final_controls']} watermark {f['final_watermark']}")
    out(f"  reconciliation of B20260921-CDC-A: {f['reconciliation']}")
    out(f"  customer C002: {f['customer']['segment']} at version {f['customer']['version']}")
    out(
        "  tombstones: "
        + ", ".join(f"{t['order_id']}|{t['line_no']} at {t['version']}" for t in f["tombstones"])
    )
    out(f"  rerun (same events as a new batch) leaves the hash: {f['rerun_sha256'] == f['final_sha256']}")
    status = f["blocked"][0] if f["blocked"] else {}
    out(f"  schema_version 2: {status.get('status')} — {status.get('reason')}")
    out(f"  after `resolve --action skip`: hash unchanged {f['resolved_sha256'] == f['final_sha256']}")
    out(f"  shuffled across three batches gives the same state: {f['shuffled_sha256'] == f['final_sha256']}")
    out(f"  final_sha256 {f['final_sha256']}")


RECEIPTS_SQL = """SELECT order_id, version, status, store_id, CAST(business_date AS VARCHAR) AS business_date,
    amount_minor FROM current_orders ORDER BY order_id"""
DAILY_VERSIONS_SQL = """SELECT store_id, CAST(business_date AS VARCHAR) AS business_date, order_count,
    amount_minor, publication_version AS version FROM daily_aggregates ORDER BY business_date, store_id"""


def seed002_demo(home: Path, out: Print) -> dict[str, Any]:
    """Shuffled receipts through source order, a delete no replay resurrects, a late receipt that
    restates a published day, an unbalanced reconciliation and a backfill over a missing day that
    both stay out of view."""
    s = session_for(home, seed002.NOW)
    landing = s.settings.landing
    seed002.deliver_shuffled(landing)
    s.run()
    first = {"orders": s.query(RECEIPTS_SQL), "daily": s.query(DAILY_VERSIONS_SQL)}
    seed002.deliver_replay_and_late(landing)
    s.run()
    late = s.query("""SELECT source_events, accepted, rejected, skipped_duplicate, skipped_stale
                      FROM reconciliation WHERE batch_id = 'POS-1003'""")[0]
    versions = s.query("""SELECT publication_version AS version, order_count, amount_minor
        FROM aggregate_versions WHERE business_date = '2026-10-01' AND store_id = 's1' ORDER BY 1""")
    hashes = s.query("SELECT asset, partition_key, version, content_sha256 FROM publications ORDER BY ALL")
    seed002.deliver_shuffled(landing)  # the same input again
    seed002.deliver_replay_and_late(landing)
    s.run()
    replay_unchanged = hashes == s.query(
        "SELECT asset, partition_key, version, content_sha256 FROM publications ORDER BY ALL"
    )
    unbalanced = _unbalanced_day(s)
    final = {"orders": s.query(RECEIPTS_SQL), "daily": s.query(DAILY_VERSIONS_SQL)}
    s.close()
    backfill = _backfill_over_a_gap(home.parent / f"{home.name}-backfill")
    figures = {
        "first": first,
        "late_reconciliation": late,
        "versions_2026_10_01": versions,
        "replay_unchanged": replay_unchanged,
        "unbalanced": unbalanced,
        "final": final,
        "backfill": backfill,
    }
    _print_seed002(out, figures)
    return figures


def _unbalanced_day(s: Session) -> dict[str, Any]:
    day = "2026-10-04"
    seed002.deliver_unbalanced_day(s.settings.landing, day)
    land(s.pipeline, day)
    with s.pipeline.warehouse.transaction() as con:  # the deliberate fault: lose the rejection evidence
        con.execute("DELETE FROM rejected_events WHERE batch_id = ?", [f"POS-{day}"])
    summary = s.run()
    candidate = s.query("SELECT reason, rows_bytes FROM candidates WHERE partition_key = ?", [day])
    pointer = s.query("SELECT value FROM pointers")[0]["value"]
    return {"runs_failed": len(summary.failed), "candidate": candidate, "pointer": pointer}


def _backfill_over_a_gap(home: Path) -> dict[str, Any]:
    settings = Settings(
        home=home,
        fixed_now=parse_instant(seed002.NOW, "now"),
        sources={seed002.SOURCE: seed002.BACKFILL["certified"]},
    )
    s = Session(settings, home / "dagster")
    seed002.deliver_backfill_case(settings.landing)
    s.run()
    statuses = {p.load_date: str(p.status) for p in decide(s.pipeline).plans}
    ok = s.backfill_in_process(seed002.BACKFILL["range"], "replay the days after the gap")
    candidates = s.query("""SELECT partition_key, reason, rows_bytes FROM candidates
                            WHERE asset = 'current_orders' ORDER BY partition_key""")
    visible = s.query("SELECT max(CAST(load_date AS VARCHAR)) AS d, count(*) AS n FROM current_orders")[0]
    applied = s.query("SELECT load_date FROM load_dates ORDER BY 1")
    cost = s.query("SELECT sum(candidate_bytes) AS b FROM costs WHERE step = 'apply'")[0]["b"]
    s.close()
    return {
        "statuses": statuses,
        "runs_ok": ok,
        "candidates": candidates,
        "visible": visible,
        "applied": [a["load_date"] for a in applied],
        "candidate_bytes": int(cost or 0),
    }


def _print_seed002(out: Print, f: dict[str, Any]) -> None:
    out("seed 002 — replayable receipts behind a publish gate")
    table(out, "current_orders after the shuffled day", f["first"]["orders"])
    out(f"  replayed update, older update of the deleted r2, late receipt: {f['late_reconciliation']}")
    table(out, "2026-10-01 / s1 versions (version 1 retained)", f["versions_2026_10_01"])
    out(f"  same input again: every publication hash unchanged {f['replay_unchanged']}")
    u = f["unbalanced"]
    out(
        f"  unbalanced reconciliation: {u['runs_failed']} run failed; consumers stay at {u['pointer']}; "
        f"candidate kept: {u['candidate'][0]['reason'] if u['candidate'] else None}"
    )
    b = f["backfill"]
    days, gap = ", ".join(seed002.BACKFILL["range"]), seed002.BACKFILL["never_delivered"]
    out(
        f"  backfill over {days} with {gap} never delivered: runs ok {b['runs_ok']}; "
        f"applied {b['applied']}; consumers see {b['visible']['d']}"
    )
    for c in b["candidates"]:
        out(f"    failed candidate {c['partition_key']}: {c['reason']} ({c['rows_bytes']} bytes kept)")
    table(out, "daily_aggregates (certified only)", f["final"]["daily"])
