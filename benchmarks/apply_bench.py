"""The apply of one load date at volume, step by step: on a copy of a finished home's
warehouse, undo its newest applied load date and apply it again in one transaction, as
``storage/apply/load_date.py`` does (the fold's staging, history, the registry, the state's hash
and controls by change, the row checks, the latest tables, the commit), and print the seconds of
each step and of each statement of the staging.

    uv run python benchmarks/replay_bench.py --events 10000000 --cases main --home /tmp/h10m
    uv run python benchmarks/apply_bench.py /tmp/h10m/home/warehouse.duckdb

The date's history and registry rows must come out as the first apply wrote them: the script
prints how many differ and exits 1 unless none do. The bookkeeping steps (reconciliation,
watermarks, the queue, certification) are left out: they write a row per batch or group. The
figures are the apply's work without Dagster, the journal or landing; ``replay_bench.py`` times
the whole run.
"""

from __future__ import annotations

import datetime as dt
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb
from fold_bench import Timed, copy_of, warehouse_parser

from replay_assets.storage.apply import latest, snapshot_scan, stage, state_digest, writes
from replay_assets.storage.apply.reading import previous_date
from replay_assets.storage.db.sql import DuckDBSql
from replay_assets.storage.db.warehouse import memory_limit
from replay_assets.storage.rules.digest import controls_by_change


def _newest(con: duckdb.DuckDBPyConnection) -> tuple[str, list[str]]:
    day = con.execute("SELECT max(load_date) FROM order_history").fetchall()[0][0]
    batches = con.execute(
        "SELECT DISTINCT batch_id FROM staged_events WHERE load_date = ? ORDER BY 1", [day]
    ).fetchall()
    return str(day), [str(b[0]) for b in batches]


WRITTEN = ("order_history", "customer_history", "event_registry")
Seconds = list[tuple[str, float]]


def _differing(con: duckdb.DuckDBPyConnection, table: str, day: str) -> int:
    """Rows by which ``table``'s rows of ``day`` differ from the copy kept before the undo."""
    ours = f"SELECT * FROM {table} WHERE load_date = $day"
    found = con.execute(
        f"""SELECT count(*) FROM ((SELECT * FROM _kept_{table} EXCEPT ALL {ours})
            UNION ALL ({ours} EXCEPT ALL SELECT * FROM _kept_{table}))""",
        {"day": day},
    ).fetchall()
    return int(found[0][0])


def apply_once(warehouse: Path, limit: str) -> tuple[Seconds, dict[str, float], dict[str, tuple[int, int]]]:
    """Undo and apply again the newest load date of a copy of ``warehouse`` under ``limit``;
    returns each step's seconds, the staging statements' and, per written table, the date's rows
    and how many of them differ from the first apply's."""
    with copy_of(warehouse, limit) as con:
        day, batches = _newest(con)
        sql = DuckDBSql(con)
        for table in WRITTEN:
            con.execute(f"CREATE TABLE _kept_{table} AS SELECT * FROM {table} WHERE load_date = ?", [day])
        con.begin()
        writes.undo_load_date(sql, day, dt.datetime.now(dt.UTC))
        con.commit()
        con.execute("CHECKPOINT")
        before = previous_date(sql, day)
        first, from_latest = before is None, latest.holds_before(sql, day)
        timed = Timed(con)
        steps: list[tuple[str, Callable[[], Any]]] = [
            ("stage_fold", lambda: stage.stage_fold(timed, batches, day)),  # type: ignore[arg-type]
            ("affected_groups", lambda: writes.affected_groups(sql)),
            ("write_history", lambda: writes.write_history(sql, day)),
            ("register_events", lambda: writes.register_events(sql, day)),
            ("digest_change", lambda: state_digest.change(con, day, first, from_latest=from_latest)),
            (
                "controls_by_change",
                lambda: controls_by_change(
                    sql, day, state_digest.base(con, before)[1], first, from_latest=from_latest
                ),
            ),
            ("check_written", lambda: snapshot_scan.check_written(con, day)),
            ("advance_latest", lambda: latest.advance(sql, day)),
            ("drop_fold", lambda: stage.drop_fold(con)),
            ("commit", con.commit),
        ]
        seconds = []
        con.begin()
        for name, step in steps:
            started = time.perf_counter()
            step()
            seconds.append((name, time.perf_counter() - started))
        counts = {
            t: (
                int(con.execute(f"SELECT count(*) FROM {t} WHERE load_date = ?", [day]).fetchall()[0][0]),
                _differing(con, t, day),
            )
            for t in WRITTEN
        }
        return seconds, timed.seconds, counts


def main() -> int:
    parser = warehouse_parser(__doc__)
    parser.add_argument("--limit", default=memory_limit(), help="DuckDB's memory limit")
    args = parser.parse_args()
    seconds, staging, counts = apply_once(args.warehouse, args.limit)
    print(f"{'step':<22} {'seconds':>8}")
    for name, took in seconds:
        print(f"{name:<22} {took:>8.2f}")
        if name == "stage_fold":
            for statement, part in staging.items():
                print(f"  {statement:<20} {part:>8.2f}")
    print(f"{'total':<22} {sum(t for _, t in seconds):>8.2f}")
    print("rows written: " + ", ".join(f"{t} {n}" for t, (n, _) in counts.items()))
    differing = sum(d for _, d in counts.values())
    print(f"rows differing from the first apply: {differing}")
    return 1 if differing else 0


if __name__ == "__main__":
    sys.exit(main())
