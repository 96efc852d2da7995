"""The fold of one load date at volume: on a copy of a finished home's warehouse, stage
and fold its first load date again (a first apply: nothing committed or registered before it)
under each DuckDB memory limit given, and print the seconds of each staging statement. Like the
apply, it stages inside a transaction (rolled back): there the temporary tables leave a join less
memory than in autocommit (``docs/facts.md``), and the figures must be the apply's.

    uv run python benchmarks/replay_bench.py --events 1000000 --cases main --home /tmp/h1m
    uv run python benchmarks/fold_bench.py /tmp/h1m/home/warehouse.duckdb --limits 1GB,150MB

The 1M case under 150 MB has about the memory per event of the 10M case under the warehouse's
1 GB, so it shows the fold's spilling in seconds. It is not a stand-in for the 10M case: a fold
that ran 10M events out of memory once passed it, so a change to the fold is judged on
``replay_bench.py --events 10000000`` too. Every limit must give the same outcomes (the last
columns); the script exits 1 when they differ.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import duckdb

from replay_assets.storage.apply.stage import FOLD_TABLES, stage_fold
from replay_assets.storage.db import segments

STATEMENTS = ("_events", "_committed", "_registry", "_fold", "_folded")


class Timed:
    """A connection that charges each statement's seconds to the temporary table it creates."""

    def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
        self.con = con
        self.seconds = dict.fromkeys(STATEMENTS, 0.0)

    def execute(self, sql: str, *args: Any) -> duckdb.DuckDBPyConnection:
        started = time.perf_counter()
        result = self.con.execute(sql, *args)
        made = next((t for t in FOLD_TABLES if f"TEMP TABLE {t} " in sql), None)
        if made in self.seconds:
            self.seconds[made] += time.perf_counter() - started
        return result


@contextmanager
def copy_of(warehouse: Path, limit: str) -> Iterator[duckdb.DuckDBPyConnection]:
    """A connection to a scratch copy of ``warehouse`` under the memory limit ``limit``, reading
    the landing's segment files where they are (in ``warehouse``'s home; only read)."""
    with tempfile.TemporaryDirectory() as scratch:
        copy = Path(scratch) / "warehouse.duckdb"
        shutil.copy(warehouse, copy)
        con = duckdb.connect(str(copy), config={"memory_limit": limit})
        segments.bind(con, warehouse.parent, create=False)  # the landing's files stay the home's
        try:
            yield con
        finally:
            con.close()


def warehouse_parser(doc: str | None) -> argparse.ArgumentParser:
    """The command line of a benchmark of a finished home's warehouse (``doc``: its help)."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "warehouse", type=Path, help="a finished home's warehouse.duckdb (copied, not changed)"
    )
    return parser


def fold_once(warehouse: Path, limit: str) -> tuple[dict[str, float], float, list[tuple[Any, ...]]]:
    """Stage and fold the first load date of a copy of ``warehouse`` under ``limit``."""
    with copy_of(warehouse, limit) as con:
        first = con.execute("SELECT min(load_date) FROM staged_events").fetchall()[0][0]
        batches = [
            r[0]
            for r in con.execute(
                "SELECT DISTINCT batch_id FROM staged_events WHERE load_date = ? ORDER BY 1", [first]
            ).fetchall()
        ]
        timed = Timed(con)
        con.begin()
        started = time.perf_counter()
        stage_fold(timed, batches, first)  # type: ignore[arg-type]
        total = time.perf_counter() - started
        outcomes = con.execute(
            "SELECT outcome, count(*), count(*) FILTER (WHERE winner) FROM _folded GROUP BY 1 ORDER BY 1"
        ).fetchall()
        con.rollback()
        return timed.seconds, total, outcomes


def main() -> int:
    parser = warehouse_parser(__doc__)
    parser.add_argument("--limits", default="1GB,150MB", help="DuckDB memory limits, comma-separated")
    args = parser.parse_args()
    print(
        f"{'limit':>8} "
        + " ".join(f"{s:>10}" for s in STATEMENTS)
        + f" {'total s':>8}  outcomes (events, winners)"
    )
    seen = set()
    for limit in args.limits.split(","):
        seconds, total, outcomes = fold_once(args.warehouse, limit)
        shown = ", ".join(f"{o} {n} {w}" for o, n, w in outcomes)
        print(
            f"{limit:>8} " + " ".join(f"{seconds[s]:>10.2f}" for s in STATEMENTS) + f" {total:>8.2f}  {shown}"
        )
        seen.add(tuple(outcomes))
    if len(seen) > 1:
        print("the outcomes differ between memory limits")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
