"""Every adapter of the warehouse's ``Store`` port (``storage/ports.py``) the contract tests run
against, by name: DuckDB in a home folder, Delta tables on the tests' real Sail server, and the
same on a Sail server in local-cluster mode (a driver and two workers, so plans shuffle between
workers; every case on it is in the slow tier). A child process builds the same store with
``make_store`` (``journal_child.py``)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from replay_assets.storage.db.warehouse import Warehouse, WarehouseReader
from replay_assets.storage.duckdb_adapter.unit import DuckDBReader, DuckDBStore

CLUSTER = "sail-cluster"
SPARK_KINDS = ("spark", CLUSTER)  # the Spark adapter, on a local Sail server and on a Sail cluster
STORES = ("duckdb", *SPARK_KINDS)
SERVERS = {"spark": "sail", CLUSTER: "sail_cluster"}  # each Spark kind's server fixture


@dataclass(frozen=True)
class Opened:
    store: Any  # a ports.Store; the Spark adapter's is still partial (docs/deploy.md)
    again: Callable[[], Opened]  # another store on the same warehouse (its own session)
    kind: str
    root: Path
    remote: str  # the Sail server's address ("" for DuckDB)


def make_store(kind: str, root: Path, remote: str) -> tuple[Any, Callable[[], None]]:
    """A store of ``kind`` on the warehouse at ``root``, and what closes it."""
    if kind == "duckdb":
        return DuckDBStore(Warehouse(root, 5.0), WarehouseReader(root, 5.0)), lambda: None
    from replay_assets.storage.spark.store import SparkStore
    from replay_assets_tests.sail_server import session

    spark = session(remote)
    return SparkStore(spark, str(root)), spark.stop


@contextmanager
def open_store(request: pytest.FixtureRequest, kind: str, tmp_path: Path) -> Iterator[Opened]:
    remote = request.getfixturevalue(SERVERS[kind]) if kind in SERVERS else ""
    root = tmp_path / "warehouse"
    closers: list[Callable[[], None]] = []

    def opened() -> Opened:
        store, close = make_store(kind, root, remote)
        closers.append(close)
        return Opened(store, opened, kind, root, remote)

    try:
        yield opened()
    finally:
        for close in closers:
            close()


def table_rows(opened: Opened, table: str) -> list[tuple[object, ...]]:
    """Every row of ``table`` as a reader of ``opened`` sees it, sorted (None first)."""
    found = [tuple(r.values()) for r in store_rows(opened.store, table)]
    return sorted(found, key=lambda row: [(v is not None, str(v)) for v in row])


def store_rows(store: Any, table: str) -> list[dict[str, object]]:
    """Every row of a warehouse ``table`` as a reader of ``store`` (either engine) sees it."""
    with store.read() as unit:
        if isinstance(unit, DuckDBReader):
            cursor = unit.con.execute(f'SELECT * FROM "{table}"')
            names = [d[0] for d in cursor.description]
            return [dict(zip(names, r, strict=True)) for r in cursor.fetchall()]
        found: list[dict[str, object]] = unit.ops.rows(unit.ops.frame(table))
        return found
