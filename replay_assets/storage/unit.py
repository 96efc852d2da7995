"""What one unit of work on the warehouse can do: the port the use cases and the journal's
executor call, whatever the engine (the scale-out interface).

A unit is one transaction or one read, opened by a ``ports.Store``; its methods are the
warehouse's operations in the use cases' terms (land a batch, apply a load date, record an
attempt, move a journal entry), never SQL. The DuckDB adapter (``storage/db/unit.py``) binds
them to the storage modules; a second engine implements the same protocol. One protocol per
room of ``storage/``, so a newcomer finds each operation beside its DuckDB code.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import polars as pl

    from replay_assets.core.aggregate import Controls
    from replay_assets.core.config import SloPolicy
    from replay_assets.core.events import ValidationContext
    from replay_assets.core.gate import CheckOutcome
    from replay_assets.core.manifest import Manifest
    from replay_assets.core.plan import DatePlan, WarehouseFacts
    from replay_assets.core.receipts import LandedCounts
    from replay_assets.core.slo import Slo
    from replay_assets.core.status import CommitState, PartitionStatus
    from replay_assets.storage.apply.load_date import ApplyResult
    from replay_assets.storage.evidence.costs import Cost
    from replay_assets.storage.journal.entries import Entry, Operation
    from replay_assets.storage.landing.area import DeliveryFile
    from replay_assets.storage.landing.ingest import Landed
    from replay_assets.storage.publish.aggregates import Published
    from replay_assets.storage.publish.reverify import Verdict


class JournalUnit(Protocol):
    """The operation journal and its fence."""

    def journal_entry(self, operation_id: str) -> Entry | None: ...
    def reload_entry(self, operation_id: str) -> Entry: ...
    def create_or_get_entry(self, op: Operation, actor: str, now: dt.datetime) -> Entry: ...
    def cas_entry(
        self,
        entry: Entry,
        *,
        nxt: CommitState,
        actor: str,
        note: str,
        now: dt.datetime,
        result: dict[str, Any] | None = None,
        target_sha256: str | None = None,
    ) -> Entry: ...
    def require_no_hold(self) -> None: ...
    def fence_committed(self, operation_id: str) -> bool: ...
    def write_fence(self, op: Operation, now: dt.datetime) -> None: ...
    def committed_in_doubt(self) -> list[Operation]: ...
    def unfinished_operations(self) -> list[dict[str, Any]]: ...
    def operation_audit(self, operation_id: str) -> list[dict[str, Any]]: ...
    def apply_operation(self, plan: DatePlan) -> Operation: ...
    def publish_operation(self, dates: list[str]) -> Operation: ...
    def prune_operation(self, day: str) -> Operation: ...
    def publications_digest(self, dates: list[str]) -> str: ...


class LandingUnit(Protocol):
    def land_batch(
        self,
        manifest: Manifest,
        *,
        files: Sequence[DeliveryFile],
        ctx: ValidationContext,
        now: dt.datetime,
        records: DeliveryFile | None = None,
    ) -> Landed: ...
    def landed_counts(self, load_date: str) -> LandedCounts:
        """What the warehouse holds of the load date's landed files, each count read on its own
        (a read: it writes nothing)."""
        ...


class ApplyUnit(Protocol):
    def warehouse_facts(self) -> WarehouseFacts: ...
    def record_attempt(
        self, plan: DatePlan, *, status: PartitionStatus, reason: str, now: dt.datetime
    ) -> None: ...
    def require_landed(self, plan: DatePlan) -> None: ...
    def apply_load_date(
        self,
        plan: DatePlan,
        *,
        first_date: str,
        run_id: str | None,
        now: dt.datetime,
        sealed_ok: bool = False,
        restate: bool = False,
    ) -> ApplyResult: ...
    def undo_load_date(self, day: str, now: dt.datetime) -> None: ...


class PublishUnit(Protocol):
    def certified_pointer(self) -> str | None: ...
    def target_digest(self, day: str, state_digest: str) -> str: ...
    def certify_state(
        self,
        day: str,
        *,
        digest: str,
        outcomes: Sequence[CheckOutcome],
        run_id: str | None,
        now: dt.datetime,
        repair_reason: str | None = None,
    ) -> None: ...
    def write_snapshot(self, day: str, *, controls: Controls, rows: int, digest: str) -> None: ...
    def record_failed_candidate(
        self,
        home: Path,
        *,
        asset: str,
        key: str,
        as_of: str,
        digest: str,
        outcomes: Sequence[CheckOutcome],
        rows: pl.DataFrame,
        run_id: str | None,
        now: dt.datetime,
    ) -> Path: ...
    def published_partitions(self, asset: str) -> list[str]: ...
    def newest_versions(self, partition: str) -> dict[str, int]: ...
    def publish_aggregates(
        self, home: Path, *, dates: list[str], run_id: str | None, now: dt.datetime
    ) -> list[Published]: ...
    def pending_groups(self) -> list[tuple[str, str, str, str]]: ...
    def refresh_published_copy(self, home: Path) -> list[str]: ...
    def reverify_state(self) -> Verdict: ...
    def reverify_aggregates(self) -> Verdict: ...
    def daily_totals(self, first: str, last: str) -> list[dict[str, Any]]: ...
    def export_table(self, name: str, as_of: str | None) -> pl.DataFrame: ...
    def reconciliation_report(self) -> list[dict[str, Any]]: ...
    def check_segments(self) -> tuple[int, list[dict[str, object]]]: ...
    def status_report(self) -> dict[str, list[dict[str, object]]]: ...


class EvidenceUnit(Protocol):
    def record_cost(
        self,
        *,
        run_id: str | None,
        step: str,
        partition_key: str,
        cost: Cost,
        now: dt.datetime,
        batch_id: str | None = None,
        events: int = 0,
        bytes_read: int = 0,
        rows_written: int = 0,
        candidate_bytes: int = 0,
    ) -> None: ...
    def run_costs(self, run_id: str, step: str) -> dict[str, float]: ...
    def insert_attempt(
        self, load_date: str, identity: str, *, status: str, reason: str, now: dt.datetime
    ) -> None: ...
    def record_step_attempt(
        self,
        run_id: str,
        *,
        step: str,
        partition_key: str,
        attempt: int,
        outcome: str,
        detail: str,
        now: dt.datetime,
    ) -> None: ...
    def step_attempts(self, run_id: str) -> list[tuple[str, str, int, str, str]]: ...
    def slo_for(self, load_date: str, policy: SloPolicy) -> Slo | None: ...
    def daily_slos(
        self, policy: SloPolicy, business_dates: list[str] | None = None
    ) -> dict[str, tuple[Slo, str]]: ...
    def set_status(
        self,
        asset: str,
        *,
        keys: Iterable[str],
        status: PartitionStatus,
        reason: str,
        now: dt.datetime,
    ) -> None: ...
    def landed_batch(self, batch_id: str) -> tuple[str, str] | None: ...
    def schema_gated(self, batch_id: str) -> int: ...
    def violated_on(self, batch_id: str, load_date: str) -> bool: ...
    def record_relanding(
        self,
        batch_id: str,
        load_date: str,
        manifest_sha256: str,
        *,
        violations: int,
        note: str,
        operator: str,
        now: dt.datetime,
    ) -> None: ...
    def record_skip(self, batch_id: str, *, note: str, operator: str, now: dt.datetime) -> None: ...
    def sensor_cursor(self, sensor: str) -> str | None: ...
    def save_sensor_cursor(self, sensor: str, cursor: str) -> None: ...
    def record_backfill(
        self,
        backfill_id: str,
        *,
        asset: str,
        first: str,
        last: str,
        note: str,
        operator: str,
        now: dt.datetime,
    ) -> None: ...


class RetentionUnit(Protocol):
    def pruned_through(self) -> str: ...
    def applied_dates(self) -> list[str]: ...
    def prune_load_date(
        self, day: str, *, operation_id: str, keep: int, now: dt.datetime
    ) -> dict[str, int]: ...
    def pruned_digest(self, day: str) -> str | None: ...


class Unit(JournalUnit, LandingUnit, ApplyUnit, PublishUnit, EvidenceUnit, RetentionUnit, Protocol):
    """One transaction or one read of the warehouse, in the use cases' terms."""
