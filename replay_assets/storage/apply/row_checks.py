"""The row-level gate over a state's rows given in parts, each in key order, and the snapshot
record it feeds: engine-neutral Python, so every engine checks its rows by these same predicates
(DuckDB streams its parts in ``snapshot_scan.py``, Spark in an engine task).

A key repeated across a part boundary is found by comparing the boundary rows, and the verdicts of
the parts combine into one, so the result equals the check over the whole frame.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import polars as pl

from replay_assets.core.aggregate import Controls, RowsDigest
from replay_assets.core.gate import (
    CheckOutcome,
    check_non_negative,
    check_schema,
    check_unique_keys,
    combine,
)

if TYPE_CHECKING:  # pandera is imported where a schema is checked (core/gate.py)
    import pandera.polars as pa

ORDER_KEY = ["order_id", "line_no"]
CUSTOMER_KEY = ["customer_id"]
AMOUNTS = ["quantity", "amount_minor", "cost_minor"]


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
class StateTable:
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


def state_tables(digests: bool) -> tuple[StateTable, StateTable]:
    """The two state tables to feed; with ``digests``, each also hashes its rows."""
    from replay_assets.core.schemas import CUSTOMER_STATE, ORDER_STATE  # lazily: pandera

    return (
        StateTable("current_orders", ORDER_STATE, ORDER_KEY, RowsDigest() if digests else None),
        StateTable("current_customers", CUSTOMER_STATE, CUSTOMER_KEY, RowsDigest() if digests else None),
    )


def verdicts_of(tables: Sequence[StateTable]) -> RowChecks:
    parts = {name: [c for t in tables for c in t.checks[name]] for name in tables[0].checks}
    return RowChecks(
        schema=combine(parts["schema"]) if parts["schema"] else check_schema({}),
        unique_keys=combine(parts["unique"]) if parts["unique"] else check_unique_keys({}),
        non_negative=combine(parts["non_negative"]) if parts["non_negative"] else check_non_negative({}),
    )


def check_rows(orders_parts: Iterable[pl.DataFrame], customer_parts: Iterable[pl.DataFrame]) -> RowChecks:
    """The row-level gate over state rows given in parts, each in key order (any engine)."""
    orders, customers = state_tables(digests=False)
    for part in orders_parts:
        orders.feed(part)
    for part in customer_parts:
        customers.feed(part)
    return verdicts_of([orders, customers])
