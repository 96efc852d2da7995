"""Every adapter of the warehouse's ``Store`` port (``storage/ports.py``) the contract tests run
against, by name: DuckDB in a home folder, and Delta tables on the tests' real Sail server."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from replay_assets.storage.db.unit import DuckDBStore
from replay_assets.storage.db.warehouse import Warehouse, WarehouseReader

STORES = ("duckdb", "spark")


@dataclass(frozen=True)
class Opened:
    store: Any  # a ports.Store; the Spark adapter's is still partial (docs/deploy.md)
    again: Callable[[], Opened]  # another store on the same warehouse (its own session)


@contextmanager
def open_store(request: pytest.FixtureRequest, kind: str, tmp_path: Path) -> Iterator[Opened]:
    if kind == "duckdb":
        home = tmp_path / "home"

        def duckdb() -> Opened:
            return Opened(DuckDBStore(Warehouse(home, 5.0), WarehouseReader(home, 5.0)), duckdb)

        yield duckdb()
        return
    from replay_assets.storage.spark.store import SparkStore
    from replay_assets_tests.sail_server import session

    remote = request.getfixturevalue("sail")
    sessions = []

    def spark() -> Opened:
        sessions.append(session(remote))
        return Opened(SparkStore(sessions[-1], str(tmp_path / "delta")), spark)

    try:
        yield spark()
    finally:
        for s in sessions:
            s.stop()
