"""Pandera schemas of the certified tables (polars API). One schema per consumer table."""

from __future__ import annotations

import pandera.polars as pa
import polars as pl

ID = r"^[A-Za-z0-9][A-Za-z0-9_.|-]{0,79}$"
DAY = r"^\d{4}-\d{2}-\d{2}$"


def _id(nullable: bool = False) -> pa.Column:
    return pa.Column(pl.String, pa.Check.str_matches(ID), nullable=nullable)


def _amount(nullable: bool = False) -> pa.Column:
    return pa.Column(pl.Int64, pa.Check.in_range(0, 10**12), nullable=nullable)


ORDER_STATE = pa.DataFrameSchema(
    {
        "order_id": _id(),
        "line_no": _amount(),
        "store_id": _id(True),
        "customer_id": _id(True),
        "product_id": _id(True),
        "business_date": pa.Column(pl.String, pa.Check.str_matches(DAY), nullable=True),
        "quantity": _amount(True),
        "amount_minor": _amount(True),
        "cost_minor": _amount(True),
        "status": pa.Column(pl.String, pa.Check.isin(["active", "cancelled", "deleted"])),
        "version": _amount(),
    },
    strict=False,
    name="current_orders",
)

CUSTOMER_STATE = pa.DataFrameSchema(
    {
        "customer_id": _id(),
        "name": pa.Column(pl.String, nullable=True),
        "segment": pa.Column(pl.String, nullable=True),
        "status": pa.Column(pl.String, pa.Check.isin(["active", "deleted"])),
        "version": _amount(),
    },
    strict=False,
    name="current_customers",
)

DAILY_AGGREGATES = pa.DataFrameSchema(
    {
        "store_id": _id(),
        "business_date": pa.Column(pl.String, pa.Check.str_matches(DAY)),
        "order_count": _amount(),
        "line_count": _amount(),
        "units": _amount(),
        "amount_minor": _amount(),
        "cost_minor": _amount(),
        "gross_profit_minor": pa.Column(pl.Int64),
    },
    strict=False,
    name="daily_aggregates",
)
