"""The fold of a load date staged in the warehouse: its events, the committed state and registry
rows they touch, and the outcomes (temporary tables)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import duckdb

from replay_assets.core.errors import Violation
from replay_assets.core.fold import Outcome
from replay_assets.storage.apply import latest
from replay_assets.storage.apply.fold_sql import fold_into
from replay_assets.storage.db import segments
from replay_assets.storage.db.sql import DuckDBSql
from replay_assets.storage.db.warehouse import one
from replay_assets.storage.rules.apply import REGISTRY_ROWS, committed_rows

FOLD_TABLES = ("_events", "_committed", "_registry", "_fold", "_folded", "_groups")
# What the fold and the committed state's lookup read of each event: ``_events`` carries only
# these, and ``_folded`` joins the outcomes back to the staged rows once. A copy of all 26 columns
# before the fold and another after it cost markedly more under a tight memory limit.
FOLD_COLUMNS = (
    "source",
    "event_id",
    "source_seq",
    "entity",
    "key",
    "version",
    "content_sha256",
    "image_sha256",
    "order_id",
    "line_no",
    "customer_id",
)


def stage_fold(con: duckdb.DuckDBPyConnection, batches: list[str], load_date: str) -> None:
    """Fold the load date's staged events in the warehouse, into temporary tables:
    ``_events`` (application order numbered by ``pos``), ``_committed`` (each touched key's state
    as of the load date before, with the group it sits in), ``_registry`` (registry rows sharing
    an event id or a source_seq), ``_fold`` and ``_folded`` (the events with their outcomes)."""
    params: dict[str, object] = {"batches": batches, "day": load_date}
    staged = segments.of_date(con, "staged_events", params)  # the date's events, its files by name
    position = f"CAST({_position(con, staged, params)} AS BIGINT)"
    con.execute(
        f"""CREATE OR REPLACE TEMP TABLE _events AS
        SELECT {", ".join(f"s.{c}" for c in FOLD_COLUMNS)}, {position} AS pos FROM {staged} s""",
        params,
    )
    sql = DuckDBSql(con)
    from_latest = latest.holds_before(sql, load_date)
    sql.keep("_committed", committed_rows(from_latest), **({} if from_latest else {"day": load_date}))
    sql.keep("_registry", REGISTRY_ROWS, day=load_date)
    fold_into(con)
    with sides_as_written(con):  # streams the staged rows through a hash table of the outcomes
        con.execute(
            f"""CREATE OR REPLACE TEMP TABLE _folded AS
            SELECT s.*, ($outcomes)[f.v // 32] AS outcome, ($rules)[nullif((f.v // 4) % 8, 0)] AS rule,
                f.v % 2 = 1 AS winner, (f.v // 2) % 2 = 1 AS new_id
            FROM (SELECT s.*, {position} AS pos FROM {staged} s) s
            JOIN (SELECT pos, CAST(list_position($outcomes, outcome) * 32
                    + coalesce(list_position($rules, rule), 0) * 4 + CAST(new_id AS INTEGER) * 2
                    + CAST(winner AS INTEGER) AS SMALLINT) AS v
                  FROM _fold) f USING (pos)""",
            {**params, "outcomes": [o.value for o in Outcome], "rules": [v.value for v in Violation]},
        )


# DuckDB builds a hash join's table on the side it estimates smaller, and it estimates a filtered
# scan of staged_events at a fraction of ``_fold`` although both hold the load date's events: it
# then hashed the 26 wide staged columns (spilling them past the memory limit) and streamed the
# four narrow outcome columns through. With the optimizer that swaps a join's sides off for the
# statement, the right side as written is the one built; the outcome, rule, new id and winner go
# into its hash table packed in one SMALLINT. Measured at volume in the apply's transaction under
# the memory limit, the sides as written and the packed outcomes each took a large share off it.
_SWAP_SIDES = "build_side_probe_side"


@contextmanager
def sides_as_written(con: duckdb.DuckDBPyConnection) -> Iterator[None]:
    """Plan the body's joins with the build side as written (the right one). DuckDB's setting is
    global to the database instance: another connection's statements meanwhile plan so too, which
    changes their speed, never their result. The setting before is restored."""
    found = one(con, "SELECT current_setting('disabled_optimizers')")
    before = str(found[0]) if found and found[0] else ""
    off = ",".join(n for n in (before, _SWAP_SIDES) if n)
    con.execute(f"SET disabled_optimizers = '{off}'")  # constants of this module, not values
    try:
        yield
    finally:
        if before:
            con.execute(f"SET disabled_optimizers = '{before}'")
        else:
            con.execute("RESET disabled_optimizers")


def _position(con: duckdb.DuckDBPyConnection, staged: str, params: dict[str, object]) -> str:
    """SQL numbering events in application order (batch order, file, line): arithmetic, so the
    load date is never sorted with its payload; a window sort only beyond the bit budget.
    Only the order matters to the fold, not that the numbers are dense."""
    found = one(
        con,
        f"SELECT list(DISTINCT source_file ORDER BY source_file), max(line_number) FROM {staged}",
        params,
    )
    files, last_line = found if found else ([], 0)
    batches = params["batches"]
    assert isinstance(batches, list)
    if len(batches) < 1 << 14 and len(files or []) < 1 << 16 and (last_line or 0) < 1 << 32:
        params["files"] = files or []
        return """(CAST(list_position($batches, s.batch_id) AS BIGINT) << 48)
            + (CAST(list_position($files, s.source_file) AS BIGINT) << 32) + s.line_number"""
    return """row_number() OVER (
            ORDER BY list_position($batches, s.batch_id), s.source_file, s.line_number)"""


def drop_fold(con: duckdb.DuckDBPyConnection) -> None:
    for table in FOLD_TABLES:
        con.execute(f"DROP TABLE IF EXISTS {table}")
