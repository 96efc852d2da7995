"""The DuckDB adapter's own two ports beneath its ``Store``: a ``DuckDBReading`` never writes and
never takes the writer lock (it serves ``status``, ``export`` and ``recovery inspect|plan`` from
the last committed state); a ``DuckDBWriting`` serialises writers, migrates the schema and gives
one transaction per use case, the journal's fence inside it. ``warehouse.py`` is their adapter;
the contract suite (``replay_assets_tests/storage/test_warehouse_ports.py``) states what an
adapter must do."""

from __future__ import annotations

from contextlib import AbstractContextManager
from pathlib import Path
from typing import Protocol

import duckdb


class DuckDBReading(Protocol):
    path: Path
    source: str  # what the last read saw: "warehouse", or a stand-in while a writer holds it

    def read(self, timeout: float | None = None) -> AbstractContextManager[duckdb.DuckDBPyConnection]:
        """A connection that sees the last committed state and refuses every write."""
        ...


class DuckDBWriting(Protocol):
    home: Path
    path: Path

    def connect(self, timeout: float | None = None) -> AbstractContextManager[duckdb.DuckDBPyConnection]:
        """A migrated connection under the writer lock (``timeout=0`` never waits)."""
        ...

    def transaction(self, timeout: float | None = None) -> AbstractContextManager[duckdb.DuckDBPyConnection]:
        """One atomic transaction: committed when the body returns, rolled back when it raises."""
        ...

    def hold(self, timeout: float | None = None) -> AbstractContextManager[None]:
        """Keep the writer lock for the body, so its connections and transactions (each still its
        own commit) pay for opening the warehouse once; re-entrant."""
        ...

    def released(self) -> AbstractContextManager[None]:
        """Give this thread's hold up for the body (the journal's steps lock one at a time)."""
        ...
