"""The commands that need the warehouse only, never Dagster (it may be down): ``status`` and
``export`` read the last committed state through the reader; ``recovery`` inspects and, with an
operator's explicit action, mends the operation journal. ``cli.py`` parses their arguments."""

import argparse
import getpass
import json
import sys

from replay_assets.core.errors import ErrorCode, ReplayError
from replay_assets.entrypoints.environment import settings_from_environment
from replay_assets.entrypoints.report import print_reading, print_retention, print_table, status_row
from replay_assets.storage.publish import exports
from replay_assets.storage.rules.published import PUBLISHED
from replay_assets.usecases.context import Pipeline
from replay_assets.usecases.operations import Operations
from replay_assets.usecases.recover import refresh_published


def cmd_recovery(args: argparse.Namespace) -> int:
    """Journal recovery with the warehouse only (Dagster may be down)."""
    from replay_assets.storage.journal import recovery

    pipeline = Pipeline(settings_from_environment(args.home))
    if args.verb == "apply":
        if not (args.operation_id and args.action and args.note):
            raise ReplayError(ErrorCode.USAGE, "recovery apply needs --operation-id, --action and --note")
        entry = recovery.apply(
            pipeline.store,
            args.operation_id,
            action=recovery.Action(args.action),
            note=args.note,
            operator=getpass.getuser(),
            evidence=lambda: refresh_published(pipeline),
            now=pipeline.now(),
        )
        print(f"operation {entry.operation_id[:16]} is {entry.state} (version {entry.version})")
        return 0
    with pipeline.store.read() as unit:
        if not args.operation_id:
            report: object = recovery.in_doubt(unit)
        elif args.verb == "inspect":
            report = recovery.inspect(unit, args.operation_id)
        else:
            report = recovery.plan(unit, args.operation_id).__dict__
    if args.json:
        print(json.dumps(report, indent=2, default=str))
    elif isinstance(report, list):
        print_table(report) if report else print("no operation in doubt")
    else:
        for key, value in report.items():  # type: ignore[attr-defined]
            print(f"{key}: {value}")
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    settings = settings_from_environment(args.home)
    output = exports.check_output(args.output, settings.home) if args.output else None
    store = Pipeline(settings).store
    with store.read() as unit:
        if store.source != "warehouse" and args.table not in PUBLISHED:
            raise ReplayError(
                ErrorCode.WAREHOUSE_BUSY,
                f"a writer holds the warehouse; {args.table} is read from it, not from the published "
                "copy: try again when the load is done",
            )
        frame = unit.reports.export_table(args.table, args.as_of)
    exports.write(frame, args.format, output, sys.stdout)
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    """Read-only: the last committed state through the reader, the waiting load dates' live
    statuses overlaid (what the next ``run`` records), never the writer lock, never a write."""
    ops = Operations(Pipeline(settings_from_environment(args.home)))
    decision, report, slos = ops.status_report()
    reading = ops.reading()
    problems = [p for p in decision.plans if p.problem]
    if args.update:
        print("\n".join(ops.consumer_update(args.update)))
        return 0 if any(p["partition_key"] == args.update for p in report["partitions"]) else 1
    if args.json:
        problem_rows = [
            {"load_date": p.load_date, "status": p.status.value, "reason": p.reason} for p in problems
        ]
        slo_rows = [found.to_record() for found in slos.values()]
        document = {
            **report,
            "unreadable_manifests": decision.unreadable,
            "problems": problem_rows,
            "slos": slo_rows,
            **reading,
        }
        print(json.dumps(document, indent=2, default=str))
    else:
        print_reading(reading)
        print_retention(report["retention"][0])
        print_table([status_row(p, slos) for p in report["partitions"]])
        for plan in problems:
            print(f"  {plan.load_date} {plan.status}: {plan.reason}")
        for text in decision.unreadable:
            print(f"  unreadable manifest {text}")
    suspect = any(p["status"] == "SUSPECT" for p in report["partitions"])
    return 1 if suspect or problems or decision.unreadable else 0
