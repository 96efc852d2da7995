"""Applying a load date on Delta: the Spark adapter's steps (``storage/apply/steps.py``). The fold
is staged here, engine by engine: its relations are kept in scratch Delta tables the engine writes
and reads back (``UnitBase.kept``; no row comes to this process), since a Spark Connect plan is
analysed again at every action and a view over the tables would change under the steps that write
them. The other steps are written once for both engines (``storage/capabilities/shared.py``), but
the gate's row hashing and row checks (``gate.py``).
"""

from __future__ import annotations

import datetime as dt

import polars as pl

from replay_assets.core.fold import Outcome
from replay_assets.core.plan import DatePlan
from replay_assets.storage.apply import latest
from replay_assets.storage.apply.load_date import ApplyResult, apply_load_date
from replay_assets.storage.capabilities import shared
from replay_assets.storage.rules.apply import REGISTRY_ROWS, committed_rows
from replay_assets.storage.spark.fold import fold
from replay_assets.storage.spark.gate import SparkGateSteps
from replay_assets.storage.spark.stepbase import (
    keep,
    local_view,
)
from replay_assets.storage.spark.unit import On, SparkSql, UnitBase

VIOLATION = Outcome.VIOLATION.value
_STAGED = ("_batches", "_events", "_committed", "_registry", "_folded", "_groups")


class SparkFoldSteps(On, shared.FoldRecords):
    def stage_fold(self, batches: list[str], load_date: str) -> None:
        """``_events`` (numbered in application order: batch order, file, line), ``_committed``,
        ``_registry``, then ``_folded``: the DuckDB adapter's ``stage.py`` on this engine."""
        local_view(self.u, "_batches", pl.DataFrame({"batch_id": batches, "n": list(range(len(batches)))}))
        events = self.u.sql(
            """SELECT s.*, row_number() OVER (ORDER BY b.n, s.source_file, s.line_number) AS pos
            FROM {staged_events} s JOIN _batches b ON b.batch_id = s.batch_id WHERE s.load_date = :day""",
            day=load_date,
        )
        keep(self.u, "_events", events)
        from_latest = latest.holds_before(self.sql, load_date)
        self.sql.keep(
            "_committed", committed_rows(from_latest), **({} if from_latest else {"day": load_date})
        )
        self.sql.keep("_registry", REGISTRY_ROWS, day=load_date)
        # a view, not kept: it reads only the kept views above, and ``_folded`` is its one reader
        fold(self.spark).createOrReplaceTempView("_fold")
        keep(
            self.u,
            "_folded",
            self.spark.sql(
                """SELECT e.*, f.outcome, f.rule, f.winner, f.new_id
                FROM _events e JOIN _fold f ON f.pos = e.pos"""
            ),
        )

    def drop_fold(self) -> None:
        staged = {*_STAGED, "_fold"}
        for view in self.spark.catalog.listTables():
            if view.name in staged and view.isTemporary:
                self.spark.catalog.dropTempView(view.name)


class SparkApplySteps:
    """Every step of applying a load date on Delta (``storage/apply/steps.py``), by stage."""

    def __init__(self, u: UnitBase) -> None:
        self.fold = SparkFoldSteps(u)
        self.writes = shared.StateWrites(SparkSql(u))
        self.gate = SparkGateSteps(u)


class ApplyReading(On, shared.ApplyReads):
    pass


class ApplyWriting(ApplyReading, shared.ApplyRecords):
    def apply_load_date(
        self,
        plan: DatePlan,
        *,
        first_date: str,
        run_id: str | None,
        now: dt.datetime,
        sealed_ok: bool = False,
        restate: bool = False,
    ) -> ApplyResult:
        steps = SparkApplySteps(self.u)
        return apply_load_date(
            steps, plan, first_date=first_date, run_id=run_id, now=now, sealed_ok=sealed_ok, restate=restate
        )
