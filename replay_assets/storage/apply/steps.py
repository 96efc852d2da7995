"""The steps of applying one load date (``load_date.py``), as a port: the orchestration there
(mode, the blocked and unchanged paths, the writes in order, the gate and certification) is
engine-neutral, and each engine supplies these steps over its own tables. The DuckDB adapter
binds them to this room's modules (``storage/duckdb_adapter/apply_steps.py``); each step's rule is in the
docstring of its DuckDB function."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Protocol

from replay_assets.core.fold import Outcome
from replay_assets.core.state import Counts

if TYPE_CHECKING:
    import polars as pl

    from replay_assets.core.aggregate import Controls
    from replay_assets.core.gate import CheckOutcome
    from replay_assets.core.plan import DatePlan
    from replay_assets.storage.apply.row_checks import RowChecks, Snapshot
    from replay_assets.storage.rules.digest import StateDigest


def counts_of(
    batches: Sequence[str],
    landed: Mapping[str, int],
    rejected: Mapping[str, int],
    outcomes: Mapping[tuple[str, str], int],
) -> dict[str, Counts]:
    """Reconciliation per batch, any engine: its landed events, rejections, and the
    fold's outcomes by (batch, outcome)."""
    return {
        b: Counts(
            int(landed.get(b, 0)),
            outcomes.get((b, Outcome.ACCEPTED.value), 0),
            rejected=int(rejected.get(b, 0)),
            skipped_duplicate=outcomes.get((b, Outcome.DUPLICATE.value), 0),
            skipped_stale=outcomes.get((b, Outcome.STALE.value), 0),
        )
        for b in batches
    }


class FoldSteps(Protocol):
    """What is applied, the fold staged for the steps after it, and its outcome per batch."""

    def applied_identity(self, day: str) -> str | None: ...
    def newest_applied(self) -> str | None: ...
    def record_applied(self, day: str, identity: str, now: dt.datetime, run_id: str | None) -> None: ...
    def stage_fold(self, batches: list[str], load_date: str) -> None: ...
    def drop_fold(self) -> None: ...
    def batch_counts(self, plan: DatePlan) -> dict[str, Counts]: ...
    def violations(self, plan: DatePlan) -> pl.DataFrame: ...
    def record_blocked(
        self, plan: DatePlan, found: pl.DataFrame, counts: dict[str, Counts], now: dt.datetime
    ) -> None: ...
    def same_history(self, day: str) -> bool: ...
    def undo_load_date(self, day: str, now: dt.datetime) -> None: ...


class StateWrites(Protocol):
    """The fold's writes: history, the event registry, the queue of groups to restate, the
    watermarks, reconciliation and the latest tables."""

    def affected_groups(self) -> list[str]: ...
    def write_history(self, day: str) -> int: ...
    def register_events(self, day: str) -> None: ...
    def queue_groups(self, dates: list[str], day: str, now: dt.datetime) -> int: ...
    def advance_watermarks(self, plan: DatePlan, day: str) -> None: ...
    def write_reconciliation(self, plan: DatePlan, counts: dict[str, Counts], status: str) -> None: ...
    def candidate_rows(self, day: str) -> pl.DataFrame: ...
    def advance_latest(self, day: str) -> None: ...
    def latest_holds_before(self, day: str) -> bool: ...


class GateSteps(Protocol):
    """The gate, by change: the state's digest and controls as the previous date's plus what the
    date changed, the row checks, and the certification of a state that passes."""

    def previous_date(self, day: str) -> str | None: ...
    def digest_base(self, before: str | None) -> tuple[StateDigest, Controls]: ...
    def digest_change(self, day: str, first: bool = False, *, from_latest: bool = False) -> StateDigest: ...
    def controls_by_change(
        self, day: str, base: Controls, first: bool = False, *, from_latest: bool = False
    ) -> tuple[Controls, Controls]: ...
    def check_written(self, day: str) -> RowChecks: ...
    def state_checks(
        self, day: str, snapshot: Snapshot, counts: dict[str, Counts], first: str, recomputed: Controls
    ) -> Sequence[CheckOutcome]: ...
    def certify_state(
        self,
        day: str,
        digest: str,
        outcomes: Sequence[CheckOutcome],
        run_id: str | None,
        now: dt.datetime,
    ) -> None: ...
    def write_snapshot(self, day: str, controls: Controls, rows: int, digest: str) -> None: ...
    def store_digest(self, day: str, digest: StateDigest) -> None: ...


class ApplySteps(Protocol):
    """The steps of applying a load date, by stage."""

    @property
    def fold(self) -> FoldSteps: ...
    @property
    def writes(self) -> StateWrites: ...
    @property
    def gate(self) -> GateSteps: ...
