"""Consumer tables out of the warehouse: an allow-list of names, never a name pasted from input."""

from __future__ import annotations

from pathlib import Path
from typing import Any, TextIO

import duckdb
import polars as pl

from replay_assets.core.errors import ErrorCode, ReplayError
from replay_assets.storage.db.sql import DuckDBSql
from replay_assets.storage.db.warehouse import query_frame
from replay_assets.storage.publish.reports import check_export
from replay_assets.storage.rules.published import AS_OF, TABLES

# Read from the published copy, a query a refresh's swap falls inside fails with DuckDB's
# "No such file" (it listed the files of the generation before; ``published_state.py``); it
# reads one certified state when run again. Bounded: a copy that keeps losing files is broken.
SWAP_ATTEMPTS = 3


def table(con: duckdb.DuckDBPyConnection, name: str, as_of: str | None) -> pl.DataFrame:
    check_export(DuckDBSql(con), name, as_of)
    return _read(con, AS_OF[name], [as_of]) if as_of is not None else _read(con, TABLES[name])


def _read(con: duckdb.DuckDBPyConnection, sql: str, params: list[object] | None = None) -> pl.DataFrame:
    """The query's rows, run again when a refresh of the published copy swapped its files
    between the query's listing and its reads (at most ``SWAP_ATTEMPTS`` times)."""
    for _ in range(SWAP_ATTEMPTS - 1):
        try:
            return query_frame(con, sql, params)
        except duckdb.IOException as error:
            if "No such file" not in str(error) and "No files found" not in str(error):
                raise
    return query_frame(con, sql, params)


def check_output(output: str, home: Path) -> str:
    """``--output`` checked before anything is read: never inside the home (its warehouse,
    published copy, landing area and instance are the pipeline's own state), and into a folder
    that exists. Raises a usage error otherwise."""
    target = Path(output).resolve()
    root = home.resolve()
    if target == root or root in target.parents:
        raise ReplayError(ErrorCode.USAGE, "--output is inside the home folder; write exports elsewhere")
    if not target.parent.is_dir():
        raise ReplayError(ErrorCode.USAGE, "the folder of --output does not exist")
    if target.is_dir():
        raise ReplayError(ErrorCode.USAGE, "--output is a folder; name a file")
    return str(target)


def write(frame: pl.DataFrame, fmt: str, output: str | None, stdout: TextIO) -> None:
    if fmt == "parquet":
        if output is None:
            raise ReplayError(ErrorCode.USAGE, "--format parquet needs --output FILE")
        frame.write_parquet(output)
    elif fmt == "jsonl":
        text = frame.write_ndjson()
        _emit(text, output, stdout)
    else:
        _emit(frame.write_csv(), output, stdout)


def _emit(text: str, output: str | None, stdout: TextIO) -> None:
    if output is None:
        stdout.write(text)
    else:
        with open(output, "w", encoding="utf-8") as fh:
            fh.write(text)


def daily_totals(con: duckdb.DuckDBPyConnection, first: str, last: str) -> list[dict[str, Any]]:
    """Certified totals per business date over all stores."""
    return query_frame(
        con,
        """SELECT CAST(business_date AS VARCHAR) AS business_date,
                  sum(order_count) AS order_count, sum(amount_minor) AS amount_minor,
                  sum(gross_profit_minor) AS gross_profit_minor
           FROM daily_aggregates WHERE CAST(business_date AS VARCHAR) BETWEEN ? AND ?
           GROUP BY 1 ORDER BY 1""",
        [first, last],
    ).to_dicts()
