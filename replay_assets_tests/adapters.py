"""Every adapter of the warehouse ports the contract tests run against, by name.

``test_warehouse_ports.py`` (the ports' own contract) and the use-case level differential
(``storage/test_storage_equals_reference.py``: random CDC streams through the use cases equal
the core oracle) are parametrised by this registry, so a second adapter (Spark Connect + Delta,
issue 17) is proven by adding it here.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from replay_assets.storage.db.connection_ports import DuckDBReading as ReaderPort
from replay_assets.storage.db.connection_ports import DuckDBWriting as WriterPort
from replay_assets.storage.db.warehouse import Warehouse, WarehouseReader

Ports = tuple[WriterPort, ReaderPort]
ADAPTERS: dict[str, Callable[[Path, float], Ports]] = {
    "duckdb": lambda home, timeout: (Warehouse(home, timeout), WarehouseReader(home, timeout)),
}
