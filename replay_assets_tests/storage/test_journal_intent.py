"""SPEC 6: the same operation id with another intent digest fails with
REPLAY_COMMIT_INTENT_CONFLICT before any source or target I/O."""

from pathlib import Path
from typing import Any

import pytest

from replay_assets.core.errors import ErrorCode, ReplayError
from replay_assets.core.journal import intent_digest
from replay_assets.demo.scenarios import seed001
from replay_assets.storage.db.sql import DuckDBSql
from replay_assets.storage.journal import executor as journal
from replay_assets.storage.journal.identities import apply_operation
from replay_assets.storage.journal.written_once import JournalReading, JournalWriting
from replay_assets.storage.unit import WarehouseWriter
from replay_assets.usecases.apply import apply
from replay_assets.usecases.context import Pipeline
from replay_assets.usecases.decide import decide
from replay_assets.usecases.land import land
from replay_assets_tests.helpers import drive, settings_for, warehouse_fingerprint

DAY = "2026-09-21"
OTHER_INTENT = intent_digest({"batches": [["pos", "B-SOMETHING-ELSE", "0" * 64]]})


@pytest.fixture
def pipeline(tmp_path: Path) -> Pipeline:
    """The seed-001 baseline applied and published; the CDC batch of DAY landed, not applied."""
    p = Pipeline(settings_for(tmp_path, seed001.NOW))
    seed001.deliver_baseline(p.settings.landing)
    drive(p)
    seed001.deliver_cdc(p.settings.landing, "B20260921-CDC-A", "2026-09-21", "2026-09-21T08:12:00Z")
    land(p, DAY)
    return p


def test_a_reused_operation_id_fails_before_the_executor_reads_or_writes_the_target(
    pipeline: Pipeline,
) -> None:
    with pipeline.warehouse.connect() as con:
        [(op_id, key, identity)] = con.execute(
            """SELECT o.operation_id, o.partition_key, m.input_identity
            FROM operations o JOIN commit_markers m USING (operation_id) WHERE o.kind = 'apply_load_date'"""
        ).fetchall()
    reused = journal.Operation(op_id, OTHER_INTENT, "apply_load_date", "current_orders", key, identity)
    calls: list[str] = []

    def mutate(unit: WarehouseWriter) -> tuple[dict[str, Any], str | None]:
        calls.append("mutate")
        return {}, None

    def target_now(unit: WarehouseWriter, entry: journal.Entry) -> str | None:
        calls.append("target_now")
        return None

    before = warehouse_fingerprint(pipeline)
    with pytest.raises(ReplayError) as raised:
        journal.execute(
            pipeline.store,
            reused,
            mutate,
            lambda: calls.append("evidence"),
            target_now,
            pipeline.now,
            None,
            repair=mutate,
        )
    assert raised.value.code is ErrorCode.COMMIT_INTENT_CONFLICT
    assert calls == []  # neither the mutation, the drift check, a repair nor the evidence ran
    assert warehouse_fingerprint(pipeline) == before


def test_applying_a_load_date_whose_operation_id_holds_another_intent_changes_nothing(
    pipeline: Pipeline,
) -> None:
    """An entry recorded under DAY's operation id with another intent (e.g. by a build whose intent
    normalisation differs): applying DAY refuses; its history, fence and that entry stay as they were."""
    plan = next(p for p in decide(pipeline).plans if p.load_date == DAY)
    with pipeline.warehouse.transaction() as con:
        op = apply_operation(DuckDBSql(con), plan)
        other = journal.Operation(
            op.operation_id, OTHER_INTENT, op.kind, op.asset, op.partition_key, op.input_identity
        )
        recorded = JournalWriting(DuckDBSql(con)).create_or_get_entry(other, "another-build", pipeline.now())
    before = warehouse_fingerprint(pipeline)
    with pytest.raises(ReplayError) as raised:
        apply(pipeline, DAY, None)
    assert raised.value.code is ErrorCode.COMMIT_INTENT_CONFLICT
    assert warehouse_fingerprint(pipeline) == before
    with pipeline.warehouse.connect() as con:
        journal_rows = JournalReading(DuckDBSql(con))
        assert journal_rows.journal_entry(op.operation_id) == recorded  # still PREPARING, version 1
        assert not journal_rows.fence_committed(op.operation_id)
        assert con.execute("SELECT count(*) FROM order_history WHERE load_date = ?", [DAY]).fetchall() == [
            (0,)
        ]
