"""The warehouse's port: a ``Store`` opens units of work (``storage/unit.py``) on one warehouse,
whatever the engine. The use cases and the journal's executor take a store; each engine is an
adapter of it (DuckDB: ``storage/duckdb_adapter/unit.py``; Spark Connect with Delta:
``storage/spark/store.py``).

A reader's unit serves ``status``, ``export`` and ``recovery inspect|plan`` from the last committed
state without the writer lock; a writer's unit is one transaction (or, under ``connect()``'s
lock, reads of the newest state), the journal's fence inside it.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from replay_assets.storage.unit import WarehouseReader, WarehouseWriter


class Store(Protocol):
    """Opens units of work on one warehouse: a writer's (serialised with every other writer) or
    a reader's (the last committed state, never the writer lock, never a write)."""

    @property
    def source(self) -> str:
        """What the last read saw: "warehouse", or a stand-in while a writer holds it."""
        ...

    def connect(self, timeout: float | None = None) -> AbstractContextManager[WarehouseReader]:
        """Reads of the newest committed state, serialised with the writers (DuckDB: under the
        writer lock, where ``read()`` may answer from a stand-in)."""
        ...

    def transaction(self, timeout: float | None = None) -> AbstractContextManager[WarehouseWriter]:
        """A writer's unit that commits when the body returns and rolls back when it raises."""
        ...

    def read(self, timeout: float | None = None) -> AbstractContextManager[WarehouseReader]:
        """A reader's unit: the last committed state, no write method at all."""
        ...

    def hold(self, timeout: float | None = None) -> AbstractContextManager[None]:
        """Keep what opening the warehouse costs (DuckDB: the writer lock and one connection)
        for the body; re-entrant. An engine whose units cost nothing to open holds nothing."""
        ...

    def released(self) -> AbstractContextManager[None]:
        """Give this thread's hold of the writer lock up for the body (the journal's steps lock
        one at a time)."""
        ...
