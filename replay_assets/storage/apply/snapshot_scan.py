"""One streamed pass over a load date's state snapshot: its content hash, its controls
and the row-level gate predicates, computed part by part in key order, so certifying a state of
any size holds one part in memory (DuckDB sorts and streams it), never the whole snapshot.

Every value equals the whole-frame computation: :class:`core.aggregate.RowsDigest` hashes the
same bytes as ``content_sha256``, :func:`core.aggregate.combine_controls` counts an order that
straddles two parts once, and a key repeated across a part boundary is found by comparing the
boundary rows.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import duckdb
import polars as pl

from replay_assets.core.aggregate import Controls, RowsDigest, combine_controls, controls_part
from replay_assets.core.events import canonical_json, sha256_text
from replay_assets.core.gate import (
    CheckOutcome,
    check_non_negative,
    check_schema,
    check_unique_keys,
    combine,
)
from replay_assets.storage.rules.tables import CUSTOMER_COLUMNS, ORDER_COLUMNS

if TYPE_CHECKING:  # pandera is imported where a schema is checked (core/gate.py)
    import pandera.polars as pa

PART_ROWS = 500_000
ORDER_KEY = ["order_id", "line_no"]
CUSTOMER_KEY = ["customer_id"]
AMOUNTS = ["quantity", "amount_minor", "cost_minor"]


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


@dataclass(frozen=True)
class RowChecks:
    """The row-level gate verdicts of a set of state rows (schema, unique keys, non-negative)."""

    schema: CheckOutcome
    unique_keys: CheckOutcome
    non_negative: CheckOutcome


@dataclass(frozen=True)
class Snapshot:
    digest: str
    controls: Controls
    rows: int
    schema: CheckOutcome
    unique_keys: CheckOutcome
    non_negative: CheckOutcome


@dataclass
class _Table:
    name: str
    schema: pa.DataFrameSchema
    key: list[str]
    digest: RowsDigest | None  # None: checks only
    rows: int = 0
    last: pl.DataFrame | None = None  # the previous part's last row

    def __post_init__(self) -> None:
        self.checks: dict[str, list[CheckOutcome]] = {"schema": [], "unique": [], "non_negative": []}

    def feed(self, part: pl.DataFrame) -> None:
        if self.digest is not None:
            self.digest.update(part)
        self.rows += part.height
        self.checks["schema"].append(check_schema({self.name: (self.schema, part)}))
        self.checks["unique"].append(check_unique_keys({self.name: (part, self.key)}))
        if self.last is not None and self.last.select(self.key).equals(part.head(1).select(self.key)):
            boundary = pl.concat([self.last, part.head(1)])
            self.checks["unique"].append(check_unique_keys({self.name: (boundary, self.key)}))
        self.last = part.tail(1)
        if self.name == "current_orders":
            self.checks["non_negative"].append(check_non_negative({self.name: (part, self.key, AMOUNTS)}))


def _tables(digests: bool) -> tuple[_Table, _Table]:
    """The two state tables to feed; with ``digests``, each also hashes its rows."""
    from replay_assets.core.schemas import CUSTOMER_STATE, ORDER_STATE  # lazily: pandera

    return (
        _Table("current_orders", ORDER_STATE, ORDER_KEY, RowsDigest() if digests else None),
        _Table("current_customers", CUSTOMER_STATE, CUSTOMER_KEY, RowsDigest() if digests else None),
    )


def _parts(con: duckdb.DuckDBPyConnection, sql: str, day: str) -> Iterator[pl.DataFrame]:
    reader = con.sql(sql, params={"day": day}).to_arrow_reader(PART_ROWS)
    for batch in reader:
        part = pl.DataFrame(pl.from_arrow(batch))
        if part.height:
            yield part


def _verdicts(tables: Sequence[_Table]) -> RowChecks:
    parts = {name: [c for t in tables for c in t.checks[name]] for name in tables[0].checks}
    return RowChecks(
        schema=combine(parts["schema"]) if parts["schema"] else check_schema({}),
        unique_keys=combine(parts["unique"]) if parts["unique"] else check_unique_keys({}),
        non_negative=combine(parts["non_negative"]) if parts["non_negative"] else check_non_negative({}),
    )


def check_written(con: duckdb.DuckDBPyConnection, day: str) -> RowChecks:
    """The row-level gate over the rows ``day`` wrote, streamed in parts: every other row of the
    state as of ``day`` is a row an earlier certified date wrote and this gate passed (cost by
    change; the audit's ``scan_snapshot`` checks the whole state)."""
    return check_rows(_parts(con, WRITTEN_ORDERS_SQL, day), _parts(con, WRITTEN_CUSTOMERS_SQL, day))


def check_rows(orders_parts: Iterable[pl.DataFrame], customer_parts: Iterable[pl.DataFrame]) -> RowChecks:
    """The row-level gate over state rows given in parts, each in key order (any engine)."""
    orders, customers = _tables(digests=False)
    for part in orders_parts:
        orders.feed(part)
    for part in customer_parts:
        customers.feed(part)
    return _verdicts([orders, customers])


def scan_snapshot(con: duckdb.DuckDBPyConnection, day: str) -> Snapshot:
    """The state as of ``day`` in one streamed pass: content hash, controls, row count and the
    schema, unique-key and non-negative verdicts."""
    orders, customers = _tables(digests=True)
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
    verdicts = _verdicts([orders, customers])
    return Snapshot(
        digest,
        combine_controls(controls),
        rows=orders.rows + customers.rows,
        schema=verdicts.schema,
        unique_keys=verdicts.unique_keys,
        non_negative=verdicts.non_negative,
    )
