"""``replay-assets``: exit 0 ok, 1 something is blocked or failed (and it says what), 2 usage."""

import argparse
import gc
import getpass
import multiprocessing
import os
import signal
import sys
import tempfile
import time
import warnings
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

from replay_assets.core import retention
from replay_assets.core.adapters import Adapter
from replay_assets.core.config import Settings, SettingsError
from replay_assets.core.errors import ErrorCode, ReplayError
from replay_assets.core.names import NameKind
from replay_assets.core.plan import refuse_partial_backfill
from replay_assets.core.status import DateStatus
from replay_assets.entrypoints.arguments import DAY, instant, name_of
from replay_assets.entrypoints.environment import settings_from_environment
from replay_assets.entrypoints.idle_run import (
    copy_current,
    record_refreshed,
    run_if_idle,
    settleable,
    warehouse_files,
)
from replay_assets.entrypoints.land_input import delivery_input, rejection_report, unmapped_report
from replay_assets.entrypoints.report import print_table
from replay_assets.entrypoints.warehouse_commands import cmd_export, cmd_recovery, cmd_status
from replay_assets.storage.landing.deliveries import create_delivery
from replay_assets.storage.rules.published import TABLES
from replay_assets.usecases.context import Pipeline
from replay_assets.usecases.decide import read_horizon
from replay_assets.usecases.operations import Operations
from replay_assets.usecases.recover import refresh_published
from replay_assets.usecases.resolve import reland, resolve
from replay_assets.usecases.status import record_waiting_statuses

if TYPE_CHECKING:  # Dagster is imported by the commands that run it, not by status or export
    from replay_assets.entrypoints.session import Session


def _session(args: argparse.Namespace) -> "Session":
    from replay_assets.entrypoints.session import Session

    _quiet_dagster_warnings()
    settings = settings_from_environment(args.home)
    return Session(settings, _dagster_home(settings))


def _dagster_home(settings: Settings) -> Path:
    dagster_home = os.environ.get("DAGSTER_HOME")
    return Path(dagster_home) if dagster_home else settings.dagster_home


def _demo_scenario(job: tuple[str, str]) -> list[str]:
    """One seed scenario in its own home; returns what it printed (runs in a worker process)."""
    from replay_assets.demo import seeds as demo
    from replay_assets.demo.seed003 import seed003_demo
    from replay_assets.demo.seed004 import seed004_demo

    _quiet_dagster_warnings()
    name, root = job
    lines: list[str] = []
    own = {"seed003": seed003_demo, "seed004": seed004_demo}
    scenario = own[name] if name in own else getattr(demo, f"{name}_demo")
    scenario(Path(root) / name, lines.append)
    return lines


def cmd_demo(args: argparse.Namespace) -> int:
    started = time.monotonic()
    root = Path(args.home) if args.home else Path(tempfile.mkdtemp(prefix="replay-assets-demo-"))
    names = ("seed003", "seed000", "seed001", "seed002", "seed004")
    taken = [name for name in names if (root / name).exists() and any((root / name).iterdir())]
    if taken:  # a scenario builds its home from nothing: an earlier demo's rows would mix into it
        raise ReplayError(
            ErrorCode.USAGE,
            f"{root} already holds demo homes ({', '.join(taken)}): the demo writes only into new "
            "homes; remove them or name another folder with --home",
        )
    jobs = [(name, str(root)) for name in names]
    # the scenarios share nothing (each has its own home and instance): two at a time on two cores
    with ProcessPoolExecutor(max_workers=2, mp_context=multiprocessing.get_context("spawn")) as pool:
        for lines in pool.map(_demo_scenario, jobs):
            print("\n".join(lines) + "\n")
    print(f"demo homes under {root}; {time.monotonic() - started:.1f} s")
    return 0


def cmd_ui(args: argparse.Namespace) -> int:
    """The Dagster UI on this home in one command. An empty home first gets the sample as files
    (a week of deliveries dated up to today, and its settings); the daemon's sensors apply them
    and a supervisor plays the sample's incident (``demo/incident.py``): a corrupted record found
    by re-verification, repaired by a real backfill. A home holding anything of its own is
    refused the sample (exit 2) before anything in it changes; ``--no-sample`` opens any home."""
    import datetime as dt

    from replay_assets.demo.sample import deliver_sample
    from replay_assets.entrypoints import ui
    from replay_assets.entrypoints.session import Session

    _quiet_dagster_warnings()
    settings = settings_from_environment(args.home)
    home = settings.home.resolve()
    if not args.no_sample:
        ui.refuse_unless_empty(home)
    sample = None
    if not args.no_sample:
        print(f"{home} is empty: landing the sample scenario (a week of deliveries up to today) first")
        sample = deliver_sample(home, dt.datetime.now(dt.UTC))
        settings = settings_from_environment(args.home)  # with the sample's settings file
    session = Session(settings, settings.dagster_home)  # the home's own instance, whatever DAGSTER_HOME says
    # the home's instance file first (the project's, or REPLAY_ASSETS_DAGSTER_YAML's) and its
    # workspace.yaml, so the sample's runs are recorded on the instance the UI serves
    _ = session.instance
    session.close()
    cmd, _env = ui.dagster_dev(settings, args.host, args.port)
    print(f"Dagster UI on http://{args.host}:{args.port} (DAGSTER_HOME={settings.dagster_home.resolve()})")
    if args.dry_run:
        print(" ".join(cmd))
        return 0
    sys.stdout.flush()
    return ui.serve(settings, args.host, args.port, sample)


def cmd_land(args: argparse.Namespace) -> int:
    """Write one delivery. Every name is validated before anything is read or written; a batch
    id already used anywhere in the landing area is refused (REPLAY_BATCH_ID_REUSED), except
    the identical delivery again, which is a no-op."""
    settings = settings_from_environment(args.home)
    ready_at = args.ready_at or f"{args.load_date}T00:00:00Z"
    batch_id, lines, records, parquet = delivery_input(args, settings)
    path, written = create_delivery(
        settings.landing,
        args.source,
        load_date=args.load_date,
        batch_id=batch_id,
        lines=lines,
        ready_at=ready_at,
        parquet=parquet,
        source_records=records,
    )
    print(f"{'landed' if written else 'already landed (identical delivery)'} batch {batch_id}: {path}")
    if args.adapter not in (None, Adapter.NATIVE, Adapter.PARQUET):  # what an adapter mapped
        now = Pipeline(settings).now()
        for line in [*unmapped_report(records), *rejection_report(lines, settings, args.source, now)]:
            print(line)
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    """Apply everything pending, then report. When the home holds nothing to do (no delivery,
    operation, pruning or restatement pending, and the Dagster instance as the last ``run``
    left it) the same report comes without loading Dagster (``idle_run.py``)."""
    settings = settings_from_environment(args.home)
    dagster_home = _dagster_home(settings)
    summary = run_if_idle(settings, dagster_home)
    session = None
    if summary is None:
        from replay_assets.entrypoints.progress import progress

        session = _session(args)
        with progress("applying pending load dates and restatements") as report:
            summary = session.run(progress=report)
    pipeline = session.pipeline if session else Pipeline(settings)
    decision = record_waiting_statuses(pipeline)
    warehouse = warehouse_files(settings.home) if settleable(settings) else []
    if session is not None or not copy_current(settings.home):  # else the copy holds these rows
        refresh_published(pipeline)  # after the statuses, so the copy's evidence holds them
        if session is None:
            record_refreshed(settings.home, dagster_home, warehouse)
    problems = [p for p in decision.plans if p.problem]
    applied = sum(1 for p in decision.plans if p.status is DateStatus.APPLIED)
    print(
        f"{len(summary.runs)} runs, {len(summary.failed)} failed; {applied} load dates applied; "
        f"{summary.orphans_failed} orphaned runs marked failed; "
        f"{summary.finished_in_doubt} in-doubt operations finished"
    )
    for p in problems:
        print(f"  {p.load_date} {p.status}: {p.reason}")
    for text in decision.unreadable:
        print(f"  unreadable manifest {text}")
    if session is not None:
        session.close()
        if settleable(settings):
            from replay_assets.entrypoints.runner import settle_instance

            settle_instance(settings.home, dagster_home, warehouse)
    return 1 if problems or summary.failed or decision.unreadable else 0


def cmd_backfill(args: argparse.Namespace) -> int:
    from replay_assets.entrypoints import backfill

    if args.from_ > args.to:
        raise ReplayError(ErrorCode.USAGE, f"--from {args.from_} is after --to {args.to}")
    if args.asset in backfill.LOAD_DATE_ASSETS:
        decision, horizon = read_horizon(Pipeline(settings_from_environment(args.home)))
        behind = retention.refusal(args.from_, horizon, "a backfill")
        if behind:
            raise ReplayError(ErrorCode.BEHIND_HORIZON, behind)
        refused = refuse_partial_backfill(decision.plans, args.from_, args.to, horizon)
        if refused:
            raise ReplayError(ErrorCode.USAGE, refused)
    session = _session(args)
    backfill_id = backfill.launch(
        session, args.asset, first=args.from_, last=args.to, note=args.note, operator=getpass.getuser()
    )
    print(f"launched backfill {backfill_id} of {args.asset} {args.from_}..{args.to} in the backfill lane")
    if not args.wait:
        session.close()
        return 0
    from replay_assets.entrypoints.progress import progress

    with progress(f"waiting for backfill {backfill_id} and the restatements it queues") as report:
        outcome = backfill.wait(session, backfill_id, report)
    refresh_published(session.pipeline)
    session.close()
    restated = outcome.restatements
    if restated is not None:
        print(f"backfill {backfill_id} {outcome.status}; {len(restated.runs)} restatement runs after it")
    else:
        print(f"backfill {backfill_id} {outcome.status}; restatements left to the running daemon, done")
    return 0 if outcome.ok and not (restated and restated.failed) else 1


def cmd_resolve(args: argparse.Namespace) -> int:
    session = _session(args)
    if args.action == "reland":
        day = reland(session.pipeline, args.batch_id, args.note, getpass.getuser())
        print(f"batch {args.batch_id}: to be landed again; run `replay-assets run` to land and apply {day}")
        return 0
    resolve(session.pipeline, args.batch_id, args.note, getpass.getuser())
    print(f"batch {args.batch_id}: skip recorded; run `replay-assets run` to apply its load date")
    return 0


def cmd_reconcile(args: argparse.Namespace) -> int:
    """The audit: reconciliation per load date must add up; then the newest certified states,
    each business date's newest aggregates and the latest tables are recomputed whole from
    history (mismatches are flagged SUSPECT); then every registered segment file of the landing
    is read and checked against its size and sha256."""
    session = _session(args)
    ops = Operations(session.pipeline)
    rows = ops.reconcile()
    print_table(rows)
    verdicts = {asset: ops.reverify(asset) for asset in ("current_orders", "daily_aggregates")}
    for asset, verdict in verdicts.items():
        print(f"{asset}: {verdict.checked} publications re-verified, {len(verdict.mismatched)} SUSPECT")
        for key, reason in verdict.reasons.items():
            print(f"  {key}: {reason}")
    checked, damaged = ops.check_segments()
    print(f"segment files: {checked} checked, {len(damaged)} damaged")
    for found in damaged:
        print(f"  {found['path']}: {found['problem']}")
    bad = any(not r["adds_up"] for r in rows) or any(v.mismatched for v in verdicts.values()) or bool(damaged)
    return 1 if bad else 0


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="replay-assets", description=__doc__)
    sub = top.add_subparsers(dest="command", required=True)

    def add(name: str, help_text: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help_text)
        p.add_argument("--home", help="home folder (default $REPLAY_ASSETS_HOME, else data/)")
        return p

    add("demo", "run every seed scenario through the Dagster definitions").set_defaults(fn=cmd_demo)
    p = add("ui", "open the Dagster UI on this home (an empty home gets the sample scenario first)")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=3000)
    p.add_argument("--dry-run", action="store_true", help="prepare the home and print the command only")
    p.add_argument("--no-sample", action="store_true", help="leave an empty home empty")
    p.set_defaults(fn=cmd_ui)
    p = add("land", "write a delivery and its manifest into the landing area")
    p.add_argument("file")
    p.add_argument("--source", required=True, type=name_of(NameKind.SOURCE))
    p.add_argument("--load-date", required=True, type=DAY)
    p.add_argument("--batch-id", type=name_of(NameKind.BATCH_ID))
    p.add_argument("--ready-at", type=instant)
    p.add_argument(
        "--adapter",
        choices=[a.value for a in Adapter],
        help="default: parquet for a *.parquet file, else native",
    )
    p.set_defaults(fn=cmd_land)
    add("run", "apply everything pending, like the daemon, then report").set_defaults(fn=cmd_run)
    p = add("backfill", "launch a Dagster backfill of a partition range in the backfill lane")
    p.add_argument("--asset", required=True)
    p.add_argument("--from", dest="from_", required=True, type=DAY)
    p.add_argument("--to", required=True, type=DAY)
    p.add_argument("--note", required=True)
    p.add_argument("--wait", action="store_true", help="wait for its runs (starts a daemon if none runs)")
    p.set_defaults(fn=cmd_backfill)
    p = add("recovery", "inspect, plan and apply recovery of journaled operations")
    p.add_argument("verb", choices=["inspect", "plan", "apply"])
    p.add_argument("--operation-id")
    p.add_argument(
        "--action",
        choices=["complete-evidence", "retry", "mark-unknown", "mark-committed", "mark-not-committed"],
    )
    p.add_argument("--note")
    p.add_argument("--json", action="store_true")
    p.set_defaults(fn=cmd_recovery)
    p = add("resolve", "operator decision on a blocked batch (audited)")
    p.add_argument("--batch-id", required=True, type=name_of(NameKind.BATCH_ID))
    p.add_argument(
        "--action",
        choices=["skip", "reland"],
        required=True,
        help="skip: apply the load date without the batch; reland: land a schema-blocked batch "
        "again under the declared upcasters",
    )
    p.add_argument("--note", required=True)
    p.set_defaults(fn=cmd_resolve)
    p = add("export", "write a consumer table")
    p.add_argument("table", choices=sorted(TABLES))
    p.add_argument("--as-of", type=DAY, help="a load date (current_orders, current_customers)")
    p.add_argument("--format", choices=["csv", "jsonl", "parquet"], default="csv")
    p.add_argument("--output", help="file to write (required for parquet)")
    p.set_defaults(fn=cmd_export)
    p = add("status", "partition status per asset, with service levels")
    p.add_argument("--json", action="store_true")
    p.add_argument(
        "--update", metavar="PARTITION", type=DAY, help="the factual update a consumer of PARTITION needs"
    )
    p.set_defaults(fn=cmd_status)
    p = add("reconcile", "reconciliation per load date, then re-verify publications from history")
    p.set_defaults(fn=cmd_reconcile)
    return top


def _quiet_dagster_warnings() -> None:
    import dagster as dg

    warnings.filterwarnings("ignore", category=dg.BetaWarning)
    warnings.filterwarnings("ignore", category=dg.PreviewWarning)


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = parser().parse_args(argv)
    except SystemExit as stop:  # argparse: --help (0) or a usage error (2), already printed
        return int(stop.code or 0)
    try:
        return int(args.fn(args))
    except ReplayError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2 if error.code in (ErrorCode.USAGE, ErrorCode.BEHIND_HORIZON) else 1
    except SettingsError as error:  # a malformed settings file or environment value
        print(f"error: {ErrorCode.USAGE}: {error}", file=sys.stderr)
        return 2


def entry() -> int:
    """The console script's and ``python -m``'s entry: ``main``, then a process exit that skips
    the interpreter's final garbage collections. Tearing down the modules of Dagster, SQLAlchemy
    and polars leaves hundreds of thousands of objects in reference cycles, and collecting them
    was a large part of every short command (a no-op ``run`` most of all).
    Freezing moves every live object out of the collector's reach: objects are still released
    by reference counting, only cyclic garbage is left to the operating system. Every connection
    the command opened is already closed (``test_cli.py`` checks no WAL is left beside the
    warehouse or the event log). Not in ``main``, which tests call in-process."""
    try:
        code = main()
        sys.stdout.flush()
    except BrokenPipeError:
        code = _reader_gone()
    sys.stderr.flush()
    gc.freeze()
    return code


def _reader_gone() -> int:
    """The exit of a command whose standard output was closed by its reader (``status | head``):
    quiet, with the status a shell reports for a process SIGPIPE stopped (128 + 13). Python
    ignores SIGPIPE, so the write raised instead; standard output now points at /dev/null, so
    the interpreter's own flush at exit finds nothing left to write."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return 128 + signal.SIGPIPE


if __name__ == "__main__":
    sys.exit(entry())
