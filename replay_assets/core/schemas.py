"""The certified tables' column rules, one declaration per consumer table, and the pandera schemas
(polars API) the gate validates with, built from them on first use.

The declaration is plain data so the Dagster definitions can show each table's columns and checks
without importing pandera (whose import, with pyspark installed, also imports pyspark's pandas
API): a command that never validates a frame never pays for it. The pandera schemas are module
attributes built lazily (``schemas.ORDER_STATE``)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandera.polars as pa

ID = r"^[A-Za-z0-9][A-Za-z0-9_.|-]{0,79}$"
DAY = r"^\d{4}-\d{2}-\d{2}$"


@dataclass(frozen=True)
class ColumnRule:
    """One column: its polars type, whether it may be null and the pandera built-in check (its
    name and arguments) every value must pass."""

    dtype: str
    nullable: bool = False
    check: tuple[str, tuple[Any, ...]] | None = None

    def check_text(self) -> str | None:
        """The check as pandera prints it (``<Check in_range: in_range(0, 10)>``)."""
        if self.check is None:
            return None
        name, args = self.check
        shown = ", ".join(f"'{a}'" if isinstance(a, str) else str(a) for a in args)
        return f"<Check {name}: {name}({shown})>"


@dataclass(frozen=True)
class TableRule:
    name: str
    columns: dict[str, ColumnRule]


def _id(nullable: bool = False) -> ColumnRule:
    return ColumnRule("String", nullable, ("str_matches", (ID,)))


def _amount(nullable: bool = False) -> ColumnRule:
    return ColumnRule("Int64", nullable, ("in_range", (0, 10**12)))


ORDER_RULE = TableRule(
    "current_orders",
    {
        "order_id": _id(),
        "line_no": _amount(),
        "store_id": _id(True),
        "customer_id": _id(True),
        "product_id": _id(True),
        "business_date": ColumnRule("String", True, ("str_matches", (DAY,))),
        "quantity": _amount(True),
        "amount_minor": _amount(True),
        "cost_minor": _amount(True),
        "status": ColumnRule("String", False, ("isin", (["active", "cancelled", "deleted"],))),
        "version": _amount(),
    },
)

CUSTOMER_RULE = TableRule(
    "current_customers",
    {
        "customer_id": _id(),
        "name": ColumnRule("String", True),
        "segment": ColumnRule("String", True),
        "status": ColumnRule("String", False, ("isin", (["active", "deleted"],))),
        "version": _amount(),
    },
)

AGGREGATES_RULE = TableRule(
    "daily_aggregates",
    {
        "store_id": _id(),
        "business_date": ColumnRule("String", False, ("str_matches", (DAY,))),
        "order_count": _amount(),
        "line_count": _amount(),
        "units": _amount(),
        "amount_minor": _amount(),
        "cost_minor": _amount(),
        "gross_profit_minor": ColumnRule("Int64"),
    },
)

RULES = {rule.name: rule for rule in (ORDER_RULE, CUSTOMER_RULE, AGGREGATES_RULE)}
_SCHEMAS = {
    "ORDER_STATE": "current_orders",
    "CUSTOMER_STATE": "current_customers",
    "DAILY_AGGREGATES": "daily_aggregates",
}


@cache
def pandera_schema(table: str) -> pa.DataFrameSchema:
    """The pandera schema of ``table``'s rule (extra columns allowed: the tables carry bookkeeping)."""
    import pandera.polars as pa
    import polars as pl

    rule = RULES[table]

    def column(c: ColumnRule) -> pa.Column:
        checks = [getattr(pa.Check, c.check[0])(*c.check[1])] if c.check else []
        return pa.Column(getattr(pl, c.dtype), checks, nullable=c.nullable)

    return pa.DataFrameSchema(
        {name: column(c) for name, c in rule.columns.items()}, strict=False, name=rule.name
    )


def __getattr__(name: str) -> pa.DataFrameSchema:
    if name in _SCHEMAS:
        return pandera_schema(_SCHEMAS[name])
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
