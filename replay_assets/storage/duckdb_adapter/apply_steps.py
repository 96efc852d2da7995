"""The DuckDB adapter's steps of applying a load date (``storage/apply/steps.py``): the storage
functions of ``storage/apply`` bound to one connection, one class per stage."""

from __future__ import annotations

import duckdb

from replay_assets.storage.apply import (
    snapshot_scan,
    stage,
    state_digest,
)
from replay_assets.storage.capabilities import shared
from replay_assets.storage.duckdb_adapter.binding import OnConnection, bound


class DuckDBFoldSteps(OnConnection, shared.FoldRecords):
    stage_fold = bound(stage.stage_fold)
    drop_fold = bound(stage.drop_fold)


class DuckDBGateSteps(OnConnection, shared.GateRecords):
    digest_base = bound(state_digest.base)
    digest_change = bound(state_digest.change)
    check_written = bound(snapshot_scan.check_written)


class DuckDBApplySteps(OnConnection):
    def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
        super().__init__(con)
        self.fold = DuckDBFoldSteps(con)
        self.writes = shared.StateWrites(self.sql)
        self.gate = DuckDBGateSteps(con)
