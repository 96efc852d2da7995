"""The row-level gate run by the engine (``storage/spark/gate.engine_row_checks``, one
``mapInArrow`` task) gives the verdicts ``row_checks.check_rows`` gives over the same rows in
this process: passing rows, a key written twice, a negative amount, and no row at all."""

from __future__ import annotations

from typing import Any

import polars as pl
import pyarrow as pa
import pytest
from pyspark.sql import SparkSession

from replay_assets.storage.apply.row_checks import check_rows
from replay_assets.storage.apply.state_digest import ENTITIES
from replay_assets.storage.spark import schema
from replay_assets.storage.spark.gate import engine_row_checks


def _order(order_id: str, line_no: int, amount: int = 100) -> dict[str, Any]:
    return {
        "order_id": order_id,
        "line_no": line_no,
        "store_id": "s1",
        "customer_id": "c1",
        "product_id": "p1",
        "business_date": "2026-01-02",
        "quantity": 1,
        "amount_minor": amount,
        "cost_minor": 50,
        "status": "active",
        "version": 1,
    }


def _customer(customer_id: str) -> dict[str, Any]:
    return {"customer_id": customer_id, "name": "Ada", "segment": "retail", "status": "active", "version": 1}


CASES = {
    "passing": ([_order("o2", 1), _order("o1", 2), _order("o1", 1)], [_customer("c2"), _customer("c1")]),
    "a key twice": ([_order("o1", 1), _order("o1", 1, amount=7)], [_customer("c1"), _customer("c1")]),
    "a negative amount": ([_order("o1", 1, amount=-5)], []),
    "nothing": ([], []),
}


@pytest.mark.parametrize("case", list(CASES))
def test_the_engine_task_gives_the_verdicts_of_the_rows_checked_here(spark: SparkSession, case: str) -> None:
    written, local = {}, []
    for entity, rows in zip(ENTITIES, CASES[case], strict=True):
        table, columns, key = ENTITIES[entity]
        types = schema.schemas()[table]
        arrow = pa.Table.from_pylist(rows, schema=pa.schema([types.field(c) for c in columns]))
        written[entity] = spark.createDataFrame(
            arrow, schema=", ".join(f"{c} {_ddl(arrow, c)}" for c in columns)
        )
        frame = pl.DataFrame(pl.from_arrow(arrow)).sort(list(key))
        local.append([frame] if frame.height else [])
    assert engine_row_checks(written) == check_rows(local[0], local[1])


def _ddl(arrow: pa.Table, column: str) -> str:
    return "bigint" if pa.types.is_integer(arrow.schema.field(column).type) else "string"
