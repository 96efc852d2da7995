"""The explicit ports of one home that every use case takes: its settings, its clock (the real
one, or a virtual one that only advances, for tests and the demo) and the warehouse's store
(``storage/ports.py``: units of work in the use cases' terms; the DuckDB adapter unless another
is given). The DuckDB writer and reader beneath it stay reachable for the DuckDB-only drivers."""

from __future__ import annotations

import datetime as dt
from contextlib import AbstractContextManager

from replay_assets.core.config import Settings
from replay_assets.storage import ports
from replay_assets.storage.db.connection_ports import DuckDBReading, DuckDBWriting
from replay_assets.storage.db.warehouse import Warehouse, WarehouseReader, memory_limit
from replay_assets.storage.duckdb_adapter.unit import DuckDBStore
from replay_assets.storage.home import in_progress
from replay_assets.storage.home.clock import VirtualClock, real_now, sleep_real


class Pipeline:
    def __init__(
        self,
        settings: Settings,
        writer: DuckDBWriting | None = None,
        reader: DuckDBReading | None = None,
        store: ports.Store | None = None,
    ) -> None:
        self.settings = settings
        self.clock = VirtualClock(settings.home, settings.fixed_now) if settings.fixed_now else None
        timeout, memory = settings.lock_timeout_seconds, memory_limit(settings.duckdb_memory_percent)
        self.warehouse: DuckDBWriting = writer or Warehouse(settings.home, timeout, memory)
        copy = settings.home / "published.duckdb"  # answers readers while a writer holds the warehouse
        self.reader: DuckDBReading = reader or WarehouseReader(
            settings.home, timeout, fallback=copy, memory=memory
        )
        self.store: ports.Store = store or _store(settings, self.warehouse, self.reader)

    def doing(self, use_case: str, partition: str, run_id: str | None) -> AbstractContextManager[None]:
        """Note what this writer does, for readers that cannot open the warehouse meanwhile."""
        return in_progress.doing(
            self.settings.home, use_case, partition=partition, run_id=run_id, now=self.now()
        )

    def require_own_files(self) -> None:
        """Refuse (REPLAY_HOME_FILE_REFUSED) before a writing command starts anything when a
        file the home keeps for itself (the note, the virtual clock) is not a bounded regular
        file: inside a run the refusal would only fail the run, without saying why."""
        in_progress.require_readable(self.settings.home)
        self.now()

    def now(self) -> dt.datetime:
        return self.clock.now() if self.clock else real_now()

    def sleep(self, seconds: float) -> None:
        """Wait on the pipeline's clock (the virtual one only advances)."""
        if self.clock:
            self.clock.sleep(seconds)
        else:
            sleep_real(seconds)


def _store(settings: Settings, writer: DuckDBWriting, reader: DuckDBReading) -> ports.Store:
    """The warehouse engine the settings name: DuckDB in the home, or Delta through Spark Connect
    (imported only then: the ``spark`` extra)."""
    if settings.warehouse == "spark":
        from replay_assets.storage.spark.connect import spark_store
        from replay_assets.storage.spark.tables import EngineLanding

        uri = settings.spark_landing_uri
        landing = EngineLanding(settings.landing, uri) if uri else None
        return spark_store(
            settings.spark_remote, settings.delta_uri, settings.spark_connect_timeout_seconds, landing
        )
    return DuckDBStore(writer, reader)
