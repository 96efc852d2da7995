"""``replay-assets demo``: each seed scenario in its own home, through the Dagster definitions.

Every function returns the figures it printed, so tests assert exactly what a person sees.
"""

from collections.abc import Callable
from pathlib import Path
from typing import Any

from replay_assets.core.config import Settings
from replay_assets.core.manifest import parse_instant
from replay_assets.scenarios import fixture, seed000, seed001
from replay_assets.session import Session

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
    s.pipeline.resolve("B20260923-CDC-D", "schema v2 is not supported yet; skipped by the demo", "demo")
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
