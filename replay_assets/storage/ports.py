"""The warehouse ports: readers that never take the writer lock, and one writer per engine.

A ``Store`` is what the use cases and the journal's executor take: it opens units of work
(``storage/unit.py``), each one transaction or one read in the use cases' terms, so a second
engine is a second adapter of it. ``storage/db/unit.py`` is the DuckDB adapter.

Beneath it, the DuckDB adapter's own two ports: a ``WarehouseReader`` never writes and never
takes the writer lock (it serves ``status``, ``export`` and ``recovery inspect|plan`` from the
last committed state); a ``WarehouseWriter`` serialises writers, migrates the schema and gives
one transaction per use case, the journal's fence inside it. ``storage/db/warehouse.py`` is
their adapter; the contract suite (``replay_assets_tests/storage/test_warehouse_ports.py``)
states what an adapter must do.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import duckdb

if TYPE_CHECKING:
    from replay_assets.storage.unit import Unit


class WarehouseReader(Protocol):
    path: Path
    source: str  # what the last read saw: "warehouse", or a stand-in while a writer holds it

    def read(self, timeout: float | None = None) -> AbstractContextManager[duckdb.DuckDBPyConnection]:
        """A connection that sees the last committed state and refuses every write."""
        ...


class WarehouseWriter(Protocol):
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


class Store(Protocol):
    """Opens units of work on one warehouse: a writer's (serialised with every other writer) or
    a reader's (the last committed state, never the writer lock, never a write)."""

    @property
    def source(self) -> str:
        """What the last read saw: "warehouse", or a stand-in while a writer holds it."""
        ...

    def connect(self, timeout: float | None = None) -> AbstractContextManager[Unit]:
        """A writer's unit under the writer lock whose every call is its own commit."""
        ...

    def transaction(self, timeout: float | None = None) -> AbstractContextManager[Unit]:
        """A writer's unit that commits when the body returns and rolls back when it raises."""
        ...

    def read(self, timeout: float | None = None) -> AbstractContextManager[Unit]:
        """A reader's unit: the last committed state; every write is refused."""
        ...

    def hold(self, timeout: float | None = None) -> AbstractContextManager[None]:
        """Keep what opening the warehouse costs (DuckDB: the writer lock and one connection)
        for the body; re-entrant. An engine whose units cost nothing to open holds nothing."""
        ...

    def released(self) -> AbstractContextManager[None]:
        """Give this thread's hold of the writer lock up for the body (the journal's steps lock
        one at a time)."""
        ...
