"""One streamed pass over a load date's state snapshot: its content hash, its controls
and the row-level gate predicates, computed part by part in key order, so certifying a state of
any size holds one part in memory (DuckDB sorts and streams it), never the whole snapshot.

Every value equals the whole-frame computation: :class:`core.aggregate.RowsDigest` hashes the
same bytes as ``content_sha256``, :func:`core.aggregate.combine_controls` counts an order that
straddles two parts once, and a key repeated across a part boundary is found by comparing the
boundary rows.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import duckdb
import polars as pl

from replay_assets.core.aggregate import combine_controls, controls_part
from replay_assets.core.events import canonical_json, sha256_text
from replay_assets.storage.apply.row_checks import (
    CUSTOMER_KEY,
    ORDER_KEY,
    RowChecks,
    Snapshot,
    check_rows,
    state_tables,
    verdicts_of,
)
from replay_assets.storage.rules.tables import CUSTOMER_COLUMNS, ORDER_COLUMNS

PART_ROWS = 500_000


def _as_of(table: str, columns: Sequence[str], key: Sequence[str]) -> str:
    """State as of ``$day`` in key order, in history's own column types (not the consumer
    macros ``orders_as_of``, which cast dates: the snapshot hash is defined on these)."""
    keys = ", ".join(key)
    return f"""SELECT {", ".join(columns)}, version FROM {table} WHERE load_date <= $day
        QUALIFY row_number() OVER (PARTITION BY {keys} ORDER BY load_date DESC) = 1
        ORDER BY {keys}"""


ORDERS_SQL = _as_of("order_history", ORDER_COLUMNS, ORDER_KEY)
CUSTOMERS_SQL = _as_of("customer_history", CUSTOMER_COLUMNS, CUSTOMER_KEY)


def _written(table: str, columns: Sequence[str], key: Sequence[str]) -> str:
    """The state rows a load date wrote (its history rows), in key order."""
    return (
        f"SELECT {', '.join(columns)}, version FROM {table} WHERE load_date = $day ORDER BY {', '.join(key)}"
    )


WRITTEN_ORDERS_SQL = _written("order_history", ORDER_COLUMNS, ORDER_KEY)
WRITTEN_CUSTOMERS_SQL = _written("customer_history", CUSTOMER_COLUMNS, CUSTOMER_KEY)


def _parts(con: duckdb.DuckDBPyConnection, sql: str, day: str) -> Iterator[pl.DataFrame]:
    reader = con.sql(sql, params={"day": day}).to_arrow_reader(PART_ROWS)
    for batch in reader:
        part = pl.DataFrame(pl.from_arrow(batch))
        if part.height:
            yield part


def check_written(con: duckdb.DuckDBPyConnection, day: str) -> RowChecks:
    """The row-level gate over the rows ``day`` wrote, streamed in parts: every other row of the
    state as of ``day`` is a row an earlier certified date wrote and this gate passed (cost by
    change; the audit's ``scan_snapshot`` checks the whole state)."""
    return check_rows(_parts(con, WRITTEN_ORDERS_SQL, day), _parts(con, WRITTEN_CUSTOMERS_SQL, day))


def scan_snapshot(con: duckdb.DuckDBPyConnection, day: str) -> Snapshot:
    """The state as of ``day`` in one streamed pass: content hash, controls, row count and the
    schema, unique-key and non-negative verdicts."""
    orders, customers = state_tables(digests=True)
    controls = []
    for part in _parts(con, ORDERS_SQL, day):
        orders.feed(part)
        controls.append(controls_part(part))
    for part in _parts(con, CUSTOMERS_SQL, day):
        customers.feed(part)
    assert orders.digest is not None and customers.digest is not None
    digest = sha256_text(
        canonical_json({"orders": orders.digest.hexdigest(), "customers": customers.digest.hexdigest()})
    )
    verdicts = verdicts_of([orders, customers])
    return Snapshot(
        digest,
        combine_controls(controls),
        rows=orders.rows + customers.rows,
        schema=verdicts.schema,
        unique_keys=verdicts.unique_keys,
        non_negative=verdicts.non_negative,
    )
