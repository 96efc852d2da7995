"""What a unit of work on the warehouse can do, whatever the engine: the ports the use cases and
the journal's executor call.

A unit is one transaction or one read, opened by a ``ports.Store``. A reader's unit
(``WarehouseReader``) has only reads: a use case that holds one cannot call a write, and mypy
says so. A writer's unit (``WarehouseWriter``) has the same reads and the writes. Each holds its
operations grouped by capability, in the use cases' terms and never SQL:
``writer.journal.cas_entry(...)``, ``reader.evidence.step_attempts(...)``. A capability that
writes is two ports, its reads and its reads plus writes, each small enough to implement twice
(DuckDB binds them to the storage modules, ``storage/duckdb_adapter/unit.py``; Spark to its Delta operations).
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
    from replay_assets.storage.landing.area import DeliveryFile
    from replay_assets.storage.landing.rows import Landed
    from replay_assets.storage.publish.procedure import Published, Verdict
    from replay_assets.storage.records import Entry, Operation
    from replay_assets.storage.rules.evidence import Cost


class JournalReader(Protocol):
    """The operation journal and its fence, read: what recovery inspects and plans."""

    def journal_entry(self, operation_id: str) -> Entry | None: ...
    def reload_entry(self, operation_id: str) -> Entry: ...
    def require_no_hold(self) -> None: ...
    def fence_committed(self, operation_id: str) -> bool: ...
    def committed_in_doubt(self) -> list[Operation]: ...
    def unfinished_operations(self) -> list[dict[str, Any]]: ...
    def operation_audit(self, operation_id: str) -> list[dict[str, Any]]: ...


class JournalWriter(JournalReader, Protocol):
    """The journal's compare-and-set transitions and the fence written with the target rows."""

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
    def write_fence(self, op: Operation, now: dt.datetime) -> None: ...


class LandingReader(Protocol):
    """What was landed: batches, their schema gate and violations, the raw segments."""

    def landed_batch(self, batch_id: str) -> tuple[str, str] | None: ...
    def schema_gated(self, batch_id: str) -> int: ...
    def violated_on(self, batch_id: str, load_date: str) -> bool: ...
    def check_segments(self) -> tuple[int, list[dict[str, object]]]: ...
    def landed_counts(self, load_date: str) -> LandedCounts:
        """What the warehouse holds of the load date's landed files, each count read on its own."""
        ...


class LandingWriter(LandingReader, Protocol):
    """Landing a verified delivery, and the operator's decisions about a blocked batch."""

    def land_batch(
        self,
        manifest: Manifest,
        *,
        files: Sequence[DeliveryFile],
        ctx: ValidationContext,
        now: dt.datetime,
        records: DeliveryFile | None = None,
    ) -> Landed: ...
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


class ApplyReader(Protocol):
    """What applying a load date reads: the warehouse's facts, the operation's identity and the
    digest of the certified target."""

    def warehouse_facts(self) -> WarehouseFacts: ...
    def require_landed(self, plan: DatePlan) -> None: ...
    def apply_operation(self, plan: DatePlan) -> Operation: ...
    def target_digest(self, day: str, state_digest: str) -> str: ...


class ApplyWriter(ApplyReader, Protocol):
    """Applying (and undoing) a load date, and certifying the state it leaves."""

    def record_attempt(
        self, plan: DatePlan, *, status: PartitionStatus, reason: str, now: dt.datetime
    ) -> None: ...
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


class PublishReader(Protocol):
    """What is certified and published, what waits to be, and the publish operation's identity."""

    def certified_pointer(self) -> str | None: ...
    def published_partitions(self, asset: str) -> list[str]: ...
    def newest_versions(self, partition: str) -> dict[str, int]: ...
    def pending_groups(self) -> list[tuple[str, str, str, str]]: ...
    def publish_operation(self, dates: list[str]) -> Operation: ...
    def publications_digest(self, dates: list[str]) -> str: ...


class PublishWriter(PublishReader, Protocol):
    """Publishing daily aggregates, keeping a refused candidate, refreshing the published copy."""

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
    def publish_aggregates(
        self, home: Path, *, dates: list[str], run_id: str | None, now: dt.datetime
    ) -> list[Published]: ...
    def refresh_published_copy(self, home: Path) -> list[str]: ...


class EvidenceReader(Protocol):
    """What runs left behind: costs, step attempts, service levels, sensor cursors."""

    def run_costs(self, run_id: str, step: str) -> dict[str, float]: ...
    def step_attempts(self, run_id: str) -> list[tuple[str, str, int, str, str]]: ...
    def slo_for(self, load_date: str, policy: SloPolicy) -> Slo | None: ...
    def daily_slos(
        self, policy: SloPolicy, business_dates: list[str] | None = None
    ) -> dict[str, tuple[Slo, str]]: ...
    def sensor_cursor(self, sensor: str) -> str | None: ...


class EvidenceWriter(EvidenceReader, Protocol):
    """Recording costs, attempts, partition statuses, sensor cursors and operator notes."""

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
    def set_status(
        self,
        asset: str,
        *,
        keys: Iterable[str],
        status: PartitionStatus,
        reason: str,
        now: dt.datetime,
    ) -> None: ...
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


class RetentionReader(Protocol):
    """How far retention has pruned, what it could prune, and a prune's identity and result."""

    def pruned_through(self) -> str: ...
    def applied_dates(self) -> list[str]: ...
    def pruned_digest(self, day: str) -> str | None: ...
    def prune_operation(self, day: str) -> Operation: ...


class RetentionWriter(RetentionReader, Protocol):
    """Pruning one load date (a journaled operation)."""

    def prune_load_date(
        self, day: str, *, operation_id: str, keep: int, now: dt.datetime
    ) -> dict[str, int]: ...


class Reports(Protocol):
    """What operators and consumers read, never write: the status report, reconciliation,
    exports, and the audits that recompute the certified state from the warehouse."""

    def status_report(self) -> dict[str, list[dict[str, object]]]: ...
    def reconciliation_report(self) -> list[dict[str, Any]]: ...
    def daily_totals(self, first: str, last: str) -> list[dict[str, Any]]: ...
    def export_table(self, name: str, as_of: str | None) -> pl.DataFrame: ...
    def reverify_state(self) -> Verdict: ...
    def reverify_aggregates(self) -> Verdict: ...


class WarehouseReader(Protocol):
    """One read of the warehouse: its reads by capability, and no write at all."""

    @property
    def journal(self) -> JournalReader: ...
    @property
    def landing(self) -> LandingReader: ...
    @property
    def apply(self) -> ApplyReader: ...
    @property
    def publish(self) -> PublishReader: ...
    @property
    def evidence(self) -> EvidenceReader: ...
    @property
    def retention(self) -> RetentionReader: ...
    @property
    def reports(self) -> Reports: ...


class WarehouseWriter(WarehouseReader, Protocol):
    """One writer's unit: the same capabilities, each with its writes."""

    @property
    def journal(self) -> JournalWriter: ...
    @property
    def landing(self) -> LandingWriter: ...
    @property
    def apply(self) -> ApplyWriter: ...
    @property
    def publish(self) -> PublishWriter: ...
    @property
    def evidence(self) -> EvidenceWriter: ...
    @property
    def retention(self) -> RetentionWriter: ...
